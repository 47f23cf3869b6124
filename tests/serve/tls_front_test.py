#!/usr/bin/env python3
"""configs/deploy/nginx-tls.conf and serve.yaml work as written: nginx terminates TLS (a certificate
made here) in front of `compactor serve`. The shipped serve.yaml refuses to start until it names a
client, saying what to add; a serve with no credential (a deployment upgraded without one) refuses
/mcp through the front, whatever Host says (the front says it forwarded the request), while one
with a client answers that client only: a streamed call's events reach the client as they arrive
(the upstream sends the rest only once the client has the first: a front that held the stream back
would leave both waiting, and the upstream gives up after 30 s), serve's own headers come through,
/mcp answers, and a body over the limit is refused. Only the files' paths and ports are replaced.

usage: tls_front_test.py COMPACTOR CONFIGS_DEPLOY_DIR
Exit status 0 when every check holds, 1 otherwise.
"""
import http.client
import http.server
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

EVENTS = [b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
          b'"content":[],"model":"m","usage":{"input_tokens":1,"output_tokens":1}}}\n\n',
          b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\n\n',
          b'event: message_stop\ndata: {"type":"message_stop"}\n\n']
CLIENT_HAS_FIRST = threading.Event()  # set by the client once it holds the first event
UPSTREAM_WAITED = []  # whether the upstream saw that before it sent the rest (it waits 30 s at most)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for i, e in enumerate(EVENTS):
            if i == 1:
                UPSTREAM_WAITED.append(CLIENT_HAS_FIRST.wait(30))
            self.wfile.write(b"%x\r\n%s\r\n" % (len(e), e))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args):
        pass


failures = []


def check(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def start_serve(cli, work, config, port, upstream, env=None):
    """serve on 127.0.0.1:PORT; its first line, and the process (None when it did not start)."""
    serve = subprocess.Popen([cli, "serve", "--config", config, "--listen", f"127.0.0.1:{port}",
                              "--upstream", f"http://127.0.0.1:{upstream.server_address[1]}"],
                             cwd=work, stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.err"), "a"), text=True,
                             env=dict(os.environ, **(env or {})))
    line = serve.stdout.readline()
    if not re.search(r"listening on http://127\.0\.0\.1:\d+", line):
        serve.wait(30)
        return None
    return serve


def stop(serve):
    serve.terminate()
    serve.wait(30)


def shipped_config(deploy, work, clients_line=None):
    """configs/deploy/serve.yaml with its archive folder put in, its two relative paths made
    absolute (as its comment tells whoever installs it elsewhere), and (when given) a client."""
    configs = os.path.dirname(os.path.abspath(deploy))
    text = open(os.path.join(deploy, "serve.yaml")).read().replace("/var/lib/compactor/archive", os.path.join(work, "archive"))
    for relative in ("../fits/claude-code.yaml", "../prices.yaml"):
        assert relative in text, f"serve.yaml no longer names {relative}"
        text = text.replace(relative, os.path.join(configs, relative[3:]))
    if clients_line:
        assert "  clients: []\n" in text, "serve.yaml no longer has `clients: []` to fill in"
        text = text.replace("  clients: []\n", "  clients:\n" + clients_line + "\n")
    path = os.path.join(work, "shipped.yaml")
    open(path, "w").write(text)
    return path


def mcp_ping(conn, headers):
    conn.request("POST", "/mcp", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', dict({"content-type": "application/json"}, **headers))
    r = conn.getresponse()
    return r.status, r.read()


def check_streamed_call(conn, headers):
    body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 16, "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    conn.request("POST", "/v1/messages", body, dict({"content-type": "application/json", "x-api-key": "sk-ant-test"}, **headers))
    r = conn.getresponse()
    check(r.status == 200, f"a streamed call through the TLS front is answered 200 (got {r.status})")
    check(r.getheader("x-compactor-status") == "unchanged", f"serve's x-compactor-status comes through ({r.getheader('x-compactor-status')})")
    first = b""
    while b"\n\n" not in first:
        more = r.read1(65536)
        if not more:
            break
        first += more
    CLIENT_HAS_FIRST.set()
    rest = r.read()
    check(first.startswith(b"event: message_start"), "the first event arrives first")
    check(first + rest == b"".join(EVENTS), "every event arrives, byte for byte")
    check(UPSTREAM_WAITED == [True], "events are not held back: the client had the first event before the upstream sent the rest"
          f" ({'it did' if UPSTREAM_WAITED == [True] else 'the upstream waited 30 s for it in vain'})")


def start_nginx(nginx, deploy, work, serve_port, front_port, cert, key):
    conf = open(os.path.join(deploy, "nginx-tls.conf")).read()
    conf = (conf.replace("127.0.0.1:8088", f"127.0.0.1:{serve_port}").replace("8443", str(front_port))
            .replace("/etc/ssl/compactor/fullchain.pem", cert).replace("/etc/ssl/compactor/privkey.pem", key))
    open(os.path.join(work, "front.conf"), "w").write(conf)
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(work, "tmp", d))
    open(os.path.join(work, "nginx.conf"), "w").write(
        ("user root root;\n" if os.geteuid() == 0 else "") +
        "worker_processes 1;\npid nginx.pid;\nerror_log stderr warn;\nevents { worker_connections 256; }\n"
        "http {\n  access_log off;\n  client_body_temp_path tmp/body; proxy_temp_path tmp/proxy;\n"
        "  fastcgi_temp_path tmp/fastcgi; uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;\n  include front.conf;\n}\n")
    proc = subprocess.Popen([nginx, "-p", work, "-c", "nginx.conf", "-e", "stderr", "-g", "daemon off;"],
                            stderr=open(os.path.join(work, "nginx.err"), "w"))
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", front_port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc


def main():
    cli, deploy = os.path.abspath(sys.argv[1]), sys.argv[2]
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        print("FAIL: nginx is not installed (bash tools/setup.sh --tests installs it)")
        return 1
    work = tempfile.mkdtemp(prefix="tls-front-")
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)

    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    serve_port, front_port = free_port(), free_port()
    nginx_proc, serve = None, None
    try:
        # The shipped config as written: no client yet, so serve does not start, and says what to add.
        refused = subprocess.Popen([cli, "serve", "--config", shipped_config(deploy, work), "--listen", f"127.0.0.1:{serve_port}"],
                                   cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started = refused.stdout.readline()  # the listening line, or nothing when it refused to start
        if started:
            refused.terminate()
        said = refused.communicate(timeout=60)[1]
        check(not started and refused.returncode == 2 and "serve behind a front needs a credential" in said
              and "compactor serve-token --name NAME" in said and "mcp_token_env: COMPACTOR_MCP_TOKEN" in said,
              f"the shipped serve.yaml without a client does not start, and names the lines to add (exit {refused.returncode}: "
              f"{started.strip()} {said.strip()[:300]})")

        # A deployment upgraded without a credential (no clients, no fronted): /mcp through the front
        # is refused, though nginx's Host names whatever the client asked for.
        with open(os.path.join(work, "c.yaml"), "w") as f:
            f.write("version: 1\nbudget: {unit: chars, limit: 100000, target: 80000}\narchive: {dir: archive}\n"
                    "pipeline:\n  - stage: snip\nserve: {max_body_bytes: 100000}\n")
        serve = start_serve(cli, work, "c.yaml", serve_port, upstream)
        if serve is None:
            print(f"FAIL: compactor serve did not start ({work}/serve.err)")
            return 1
        nginx_proc = start_nginx(nginx, deploy, work, serve_port, front_port, cert, key)
        context = ssl.create_default_context(cafile=cert)
        conn = http.client.HTTPSConnection("localhost", front_port, context=context, timeout=30)
        status, answer = mcp_ping(conn, {})
        check(status == 403 and b"came through a proxy (x-forwarded-for)" in answer,
              f"/mcp through the front without a credential is refused ({status} {answer[:200]!r})")
        # A refusal from serve before the body is read closes serve's connection, and nginx (its
        # request body unbuffered) then drops the client's though it answered keep-alive: a new
        # connection, as a client would open.
        conn = http.client.HTTPSConnection("localhost", front_port, context=context, timeout=30)
        conn.request("POST", "/v1/messages", b"x" * 200000, {"content-type": "application/json"})
        r = conn.getresponse()
        r.read()
        check(r.status == 413, f"a body over serve.max_body_bytes is refused through the front ({r.status})")
        stop(serve)

        # The shipped config with a client (the line serve-token prints): that client only.
        issued = subprocess.run([cli, "serve-token", "--name", "alice"], capture_output=True, text=True, check=True).stdout
        token = re.search(r"token: (cpt_[0-9a-f]+)", issued).group(1)
        line = re.search(r"^( +- \{name: alice, .*\})$", issued, re.M).group(1)
        serve = start_serve(cli, work, shipped_config(deploy, work, line), serve_port, upstream)
        if serve is None:
            print(f"FAIL: compactor serve did not start on the shipped config with a client ({work}/serve.err)")
            return 1
        conn = http.client.HTTPSConnection("localhost", front_port, context=context, timeout=60)
        check_streamed_call(conn, {"x-compactor-token": token})
        status, answer = mcp_ping(conn, {"authorization": "Bearer " + token})
        check(status == 200 and json.loads(answer).get("result") == {}, f"/mcp answers the client through the front ({status})")
        status, answer = mcp_ping(conn, {})
        check(status == 401, f"/mcp refuses a caller without a token through the front ({status})")
        conn = http.client.HTTPSConnection("localhost", front_port, context=context, timeout=30)  # as above
        conn.request("POST", "/v1/messages", b"{}", {"content-type": "application/json", "x-api-key": "sk-ant-test"})
        r = conn.getresponse()
        r.read()
        check(r.status == 401, f"an API call without a client's token is refused through the front ({r.status})")
    finally:
        if nginx_proc:
            nginx_proc.terminate()
            nginx_proc.wait(10)
        if serve:
            stop(serve)
        upstream.shutdown()
    if failures:
        print(f"see {work}/nginx.err and {work}/serve.err")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
