#!/usr/bin/env python3
"""What warm upstream connections save: model calls through `compactor serve` to a loopback HTTPS
upstream (a self-signed certificate made here with openssl, trusted by serve through
serve.ca_file), against the same calls made straight to it with a new TLS connection each (what
serve did before it kept connections) and with one kept connection.

It prints, for N sequential calls each way, p50 and mean time per call and the TLS handshakes the
upstream saw, and the handshake time serve saves per call (cold minus warm, straight to the
upstream). A benchmark, and with --check a test: it exits 1 unless every call through serve was
answered and serve opened at most --io-threads connections for them.

usage: warm_upstream.py COMPACTOR [--calls 50] [--io-threads 1] [--check]
"""
import argparse
import http.client
import http.server
import os
import re
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BODY = b'{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}'
REPLY = (b'{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],'
         b'"model":"m","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}')


def make_certificate(folder):
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


class Upstream(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, cert, key):
        self.handshakes = 0
        self.lock = threading.Lock()
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        super().__init__(("127.0.0.1", 0), Handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        tls = self.context.wrap_socket(sock, server_side=True)  # the handshake, counted
        with self.lock:
            self.handshakes += 1
        return tls, addr


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real API
    disable_nagle_algorithm = True

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)

    def log_message(self, *args):
        pass


def timed_calls(n, connect, reuse):
    times, conn = [], None
    for _ in range(n):
        t = time.perf_counter()
        if conn is None or not reuse:
            conn = connect()
        conn.request("POST", "/v1/messages", BODY, {"content-type": "application/json", "x-api-key": "sk-ant-bench"})
        r = conn.getresponse()
        r.read()
        if r.status != 200:
            raise SystemExit(f"warm_upstream.py: a call was answered {r.status}")
        times.append(time.perf_counter() - t)
        if not reuse:
            conn.close()
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("compactor")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--io-threads", type=int, default=1)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="warm-upstream-")
    cert, key = make_certificate(work)
    upstream = Upstream(cert, key)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = upstream.server_address[1]
    client = ssl.create_default_context(cafile=cert)
    https = lambda: http.client.HTTPSConnection("127.0.0.1", port, context=client)  # noqa: E731

    rows = []
    for name, connect, reuse in (("straight, a new TLS connection per call", https, False),
                                 ("straight, one kept connection", https, True)):
        before = upstream.handshakes
        times = timed_calls(a.calls, connect, reuse)
        rows.append((name, times, upstream.handshakes - before))

    with open(os.path.join(work, "c.yaml"), "w") as f:
        f.write("version: 1\nbudget: {unit: chars, limit: 100000, target: 80000}\narchive: {dir: archive}\n"
                f"pipeline:\n  - stage: snip\nserve: {{ca_file: {cert}, io_threads: {a.io_threads}}}\n")
    serve = subprocess.Popen([os.path.abspath(a.compactor), "serve", "--config", "c.yaml", "--listen", "127.0.0.1:0",
                              "--upstream", f"https://127.0.0.1:{port}"], cwd=work, stdout=subprocess.PIPE,
                             stderr=open(os.path.join(work, "serve.err"), "w"), text=True)
    try:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", serve.stdout.readline())
        if not m:
            raise SystemExit(f"warm_upstream.py: compactor serve did not start (see {work}/serve.err)")
        before = upstream.handshakes
        times = timed_calls(a.calls, lambda: http.client.HTTPConnection("127.0.0.1", int(m.group(1))), False)
        rows.append(("through serve (a new client connection per call)", times, upstream.handshakes - before))
    finally:
        serve.terminate()
        serve.wait(30)

    print(f"{a.calls} calls each way to a loopback HTTPS upstream (TLS 1.3, P-256):")
    print(f"  {'':52}{'p50':>9}{'mean':>9}{'TLS handshakes':>16}")
    for name, times, handshakes in rows:
        print(f"  {name:52}{statistics.median(times) * 1000:>6.2f} ms{statistics.mean(times) * 1000:>6.2f} ms{handshakes:>16}")
    cold, warm = statistics.median(rows[0][1]), statistics.median(rows[1][1])
    print(f"  a handshake costs {(cold - warm) * 1000:.2f} ms per call here (loopback; a real network adds its round trips); "
          f"serve paid {rows[2][2]} for {a.calls} calls")
    ok = rows[2][2] <= a.io_threads
    if a.check and not ok:
        print(f"FAIL: serve opened {rows[2][2]} TLS connections for {a.calls} calls (at most {a.io_threads} expected)")
    return 0 if ok or not a.check else 1


if __name__ == "__main__":
    sys.exit(main())
