#!/usr/bin/env python3
"""configs/deploy/nginx-tls.conf works as written: nginx terminates TLS (a certificate made here)
in front of `compactor serve`, a streamed call's events reach the client as they arrive (the
upstream sends the rest only once the client has the first: a front that held the stream back
would leave both waiting, and the upstream gives up after 30 s), serve's own headers come through,
/mcp answers through the front, and a body over the limit is refused. Only the file's paths and
ports are replaced.

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

    with open(os.path.join(work, "c.yaml"), "w") as f:
        f.write("version: 1\nbudget: {unit: chars, limit: 100000, target: 80000}\narchive: {dir: archive}\n"
                "pipeline:\n  - stage: snip\nserve: {max_body_bytes: 100000}\n")
    serve = subprocess.Popen([cli, "serve", "--config", "c.yaml", "--listen", "127.0.0.1:0",
                              "--upstream", f"http://127.0.0.1:{upstream.server_address[1]}"],
                             cwd=work, stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.err"), "w"), text=True)
    nginx_proc = None
    try:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", serve.stdout.readline())
        if not m:
            print(f"FAIL: compactor serve did not start ({work}/serve.err)")
            return 1
        serve_port, front_port = int(m.group(1)), free_port()
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
        nginx_proc = subprocess.Popen([nginx, "-p", work, "-c", "nginx.conf", "-e", "stderr", "-g", "daemon off;"],
                                      stderr=open(os.path.join(work, "nginx.err"), "w"))
        context = ssl.create_default_context(cafile=cert)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", front_port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)

        body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 16, "stream": True,
                           "messages": [{"role": "user", "content": "hi"}]}).encode()
        conn = http.client.HTTPSConnection("localhost", front_port, context=context, timeout=60)
        conn.request("POST", "/v1/messages", body, {"content-type": "application/json", "x-api-key": "sk-ant-test"})
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

        conn.request("POST", "/mcp", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', {"content-type": "application/json"})
        r = conn.getresponse()
        check(r.status == 200 and json.loads(r.read()).get("result") == {}, f"/mcp answers through the front ({r.status})")

        conn.request("POST", "/v1/messages", b"x" * 200000, {"content-type": "application/json"})
        r = conn.getresponse()
        r.read()
        check(r.status == 413, f"a body over serve.max_body_bytes is refused through the front ({r.status})")
    finally:
        if nginx_proc:
            nginx_proc.terminate()
            nginx_proc.wait(10)
        serve.terminate()
        serve.wait(30)
        upstream.shutdown()
    if failures:
        print(f"see {work}/nginx.err and {work}/serve.err")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
