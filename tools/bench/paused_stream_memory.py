#!/usr/bin/env python3
"""What a client that stops reading costs serve when its upstream speaks HTTP/2: nginx (from
Debian) serves a large file over TLS with HTTP/2 on loopback (a certificate made here, trusted by
serve through serve.ca_file); N clients ask serve for it, read the first --read-mib MiB as fast as they can, and then nothing.
serve pauses each upstream call once 64 KiB wait for its client, but an HTTP/2 stream may keep
receiving what its flow-control window allows (libcurl 7.88 opens each with 32 MiB). It prints
serve's resident memory before and once it has settled, per held stream, the protocol nginx
served serve with, and the bytes it sent; run it with two builds to compare. With --check, a
test: it exits 1 when a paused stream costs serve more than --limit-mib (its resident memory and
its connection's kernel receive buffer, per stream).

usage: paused_stream_memory.py COMPACTOR [--clients 4] [--mib 64] [--read-mib 16] [--check] [--limit-mib 4]
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def settled_rss(pid, seconds=30):
    """serve's resident memory once it has stopped growing (five readings 200 ms apart within 1%)."""
    readings, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        readings.append(rss_kib(pid))
        last = readings[-5:]
        if len(last) == 5 and max(last) - min(last) <= max(last) // 100:
            return last[-1]
        time.sleep(0.2)
    return readings[-1]


def kernel_receive(pid, port):
    """The bytes waiting in serve's sockets to `port`, and their receive buffers' sizes (ss -tmnp)."""
    out = subprocess.run(["ss", "-tmnp", "dst", f"127.0.0.1:{port}"], capture_output=True, text=True).stdout.split("\n")
    waiting = buffers = 0
    for i, line in enumerate(out):
        if f"pid={pid}," in line and i + 1 < len(out):
            waiting += int(line.split()[1])
            m = re.search(r"rb(\d+)", out[i + 1])
            buffers += int(m.group(1)) if m else 0
    return waiting, buffers


def start_nginx(work, cert, key, port):
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(work, "tmp", d), exist_ok=True)
    open(os.path.join(work, "nginx.conf"), "w").write(
        ("user root root;\n" if os.geteuid() == 0 else "") +
        "worker_processes 1;\npid nginx.pid;\nerror_log stderr warn;\nevents { worker_connections 256; }\n"
        "http {\n  log_format sent '$server_protocol $body_bytes_sent';\n"
        f"  access_log {work}/access.log sent;\n"
        "  client_body_temp_path tmp/body; proxy_temp_path tmp/proxy;\n"
        "  fastcgi_temp_path tmp/fastcgi; uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;\n"
        f"  server {{\n    listen 127.0.0.1:{port} ssl http2;\n    ssl_certificate {cert};\n    ssl_certificate_key {key};\n"
        f"    root {work}/www;\n  }}\n}}\n")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen([nginx, "-p", work, "-c", "nginx.conf", "-e", "stderr", "-g", "daemon off;"],
                            stderr=open(os.path.join(work, "nginx.err"), "w"))
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nginx did not start")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("compactor")
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--mib", type=int, default=64)
    p.add_argument("--read-mib", type=int, default=16)
    p.add_argument("--check", action="store_true")
    p.add_argument("--limit-mib", type=float, default=4)
    a = p.parse_args()
    cost = None
    work = tempfile.mkdtemp(prefix="compactor-paused-stream-")
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    os.makedirs(os.path.join(work, "www"))
    with open(os.path.join(work, "www", "big.bin"), "wb") as f:
        f.write(os.urandom(1 << 20) * a.mib)
    port = free_port()
    nginx = start_nginx(work, cert, key, port)
    with open(os.path.join(work, "c.yaml"), "w") as f:
        f.write("version: 1\nbudget: {unit: chars, limit: 100000, target: 80000}\narchive: {dir: archive}\n"
                f"pipeline:\n  - stage: snip\nserve: {{ca_file: {cert}}}\n")
    serve = subprocess.Popen([os.path.abspath(a.compactor), "serve", "--config", "c.yaml", "--listen", "127.0.0.1:0",
                              "--upstream", f"https://127.0.0.1:{port}"],
                             cwd=work, stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.err"), "w"), text=True)
    clients = []
    try:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", serve.stdout.readline())
        if not m:
            print(f"compactor serve did not start ({work}/serve.err)")
            return 1
        before = settled_rss(serve.pid)
        for _ in range(a.clients):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the client itself holds little
            s.connect(("127.0.0.1", int(m.group(1))))
            s.sendall(f"GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1:{m.group(1)}\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(1)
            if not head.startswith(b"HTTP/1.1 200"):
                print("not answered 200:", head.decode(errors="replace").splitlines()[0])
                return 1
            clients.append(s)
        # Each client reads fast for a while (the connections' buffers grow with the rate), then stops.
        for s in clients:
            left = a.read_mib << 20
            while left > 0:
                left -= len(s.recv(min(left, 1 << 16)))
        held = settled_rss(serve.pid)
        print(f"serve's resident memory: {before / 1024:.1f} MiB before, {held / 1024:.1f} MiB with {a.clients} paused streams "
              f"of a {a.mib} MiB answer: {(held - before) / 1024 / a.clients:.1f} MiB per paused stream")
        waiting, buffers = kernel_receive(serve.pid, port)
        print(f"in the kernel, on serve's connections to nginx: {waiting / (1 << 20):.1f} MiB received and not read, "
              f"receive buffers {buffers / (1 << 20):.1f} MiB in all")
        cost = ((held - before) * 1024 + buffers) / (1 << 20) / a.clients
    finally:
        for s in clients:
            s.close()
        serve.terminate()
        serve.wait(30)
        nginx.terminate()
        nginx.wait(10)
    lines = open(os.path.join(work, "access.log")).read().split("\n")
    for line in filter(None, lines):
        proto, sent = line.split()
        print(f"nginx served serve over {proto}: {int(sent) / (1 << 20):.1f} MiB sent before the stream was closed")
    shutil.rmtree(work, ignore_errors=True)
    if a.check and (cost is None or cost > a.limit_mib):
        print(f"FAIL: a paused stream costs serve {cost:.1f} MiB, more than {a.limit_mib} MiB")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
