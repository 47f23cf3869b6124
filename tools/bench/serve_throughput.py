#!/usr/bin/env python3
"""Calls a second through `compactor serve` against the upstream alone, in one run (a benchmark,
not a test).

The load is Debian's `ab` (apache2-utils: `apt-get install apache2-utils`), keep-alive, C calls
at once, N calls in all; the upstream is nginx (nginx-light, from `tools/setup.sh --tests`)
answering every POST with the same small Messages reply on loopback. The body is the first
messages of a real session in tests/data (about 95 KB, ending with a user turn whose results
are small): below the default config's trigger, so no stage acts on it and serve forwards it
without a pipeline worker. Phases, each after a warm-up of 100 calls:
  1. straight: ab against nginx;
  2. serve with each CONFIG (default: configs/default.yaml, configs/demo-50k-chars.yaml, whose
     50,000-char budget compacts the body on its first call and then continues that compacted
     history, and the default with a stage that sees every call, so that every call runs a
     worker: the per-call cost before the fast path).
It prints, per phase, calls/s, p50 and p99 (ab's, in ms), the CPU ab took and serve's (the server,
its zygote and the workers) per call, and from serve's /metrics how many calls took each path.
Run it when the machine is otherwise idle; the load average is printed at the start and the end.

usage: serve_throughput.py COMPACTOR [--calls 3000] [--concurrency 16] [--config FILE ...]
"""
import argparse
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SESSION = os.path.join(ROOT, "tests", "data", "cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json")
REPLY = '{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],' \
        '"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}'
EVERY_CALL = "  - stage: micro\n    params: {keep_recent: 5, min_chars: 600, until: target}\n"  # declares no condition: it sees every call


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def body_of(session, target=100000):
    """The longest prefix of `session` up to `target` bytes that ends before an assistant message
    with a user turn whose tool results are small (under arrival's 4,000 chars)."""
    messages = json.load(open(session))
    best, size = None, 0
    for i, m in enumerate(messages):
        size += len(json.dumps(m))
        if size > target:
            break
        if i + 1 < len(messages) and messages[i + 1]["role"] == "assistant" and m["role"] == "user":
            content = m["content"] if isinstance(m["content"], list) else []
            if all(len(json.dumps(b.get("content"))) < 4000 for b in content if b.get("type") == "tool_result"):
                best = i + 1
    return json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages[:best]})


def start_nginx(work, port):
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(work, "tmp", d), exist_ok=True)
    open(os.path.join(work, "nginx.conf"), "w").write(
        ("user root root;\n" if os.geteuid() == 0 else "") +
        "worker_processes 1;\npid nginx.pid;\nerror_log stderr warn;\nevents { worker_connections 1024; }\n"
        "http {\n  access_log off;\n  client_max_body_size 8m;\n  client_body_buffer_size 256k;\n"
        "  client_body_temp_path tmp/body; proxy_temp_path tmp/proxy;\n"
        "  fastcgi_temp_path tmp/fastcgi; uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;\n"
        f"  keepalive_requests 100000;\n  server {{\n    listen 127.0.0.1:{port};\n    default_type application/json;\n"
        f"    location / {{ return 200 '{REPLY}'; }}\n  }}\n}}\n")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen([nginx, "-p", work, "-c", "nginx.conf", "-e", "stderr", "-g", "daemon off;"],
                            stderr=open(os.path.join(work, "nginx.err"), "w"))
    if not wait_port(port):
        raise RuntimeError(f"nginx did not start ({work}/nginx.err)")
    return proc


def cpu_seconds(pid):
    """CPU of a process and of its children it has reaped (the zygote's workers), in seconds."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def process_tree(pid):
    out = [pid]
    for child in open(f"/proc/{pid}/task/{pid}/children").read().split() if os.path.exists(f"/proc/{pid}/task/{pid}/children") else []:
        out += process_tree(int(child))
    return out


def ab(url, body_file, calls, concurrency):
    """ab's calls/s, p50, p99 (ms), failures and its own CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run(["ab", "-q", "-k", "-c", str(concurrency), "-n", str(calls), "-p", body_file, "-T", "application/json",
                          "-H", "anthropic-version: 2023-06-01", url], capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = run.stdout
    if run.returncode != 0:
        raise RuntimeError(f"ab failed: {run.stderr.strip() or out[-500:]}")
    rate = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))
    p50 = int(re.search(r"^\s+50%\s+(\d+)", out, re.M).group(1))
    p99 = int(re.search(r"^\s+99%\s+(\d+)", out, re.M).group(1))
    failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
    non2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rate, p50, p99, failed + (int(non2xx.group(1)) if non2xx else 0), cpu


def paths(port):
    text = subprocess.run(["curl", "-s", f"http://127.0.0.1:{port}/metrics"], capture_output=True, text=True).stdout
    found = dict(re.findall(r'compactor_serve_path_seconds_count\{path="(\w+)"\} (\d+)', text))
    return ", ".join(f"{k} {v}" for k, v in sorted(found.items())) or "none"


def serve_phase(a, work, name, config_text, upstream_port, body_file):
    folder = os.path.join(work, name)
    os.makedirs(folder)
    with open(os.path.join(folder, "c.yaml"), "w") as f:
        f.write(config_text)
    serve = subprocess.Popen([os.path.abspath(a.compactor), "serve", "--config", "c.yaml", "--listen", "127.0.0.1:0", "--upstream",
                              f"http://127.0.0.1:{upstream_port}"],
                             cwd=folder, stdout=subprocess.PIPE, stderr=open(os.path.join(folder, "serve.err"), "w"), text=True)
    try:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", serve.stdout.readline())
        if not m:
            raise RuntimeError(f"compactor serve did not start ({folder}/serve.err)")
        port = int(m.group(1))
        url = f"http://127.0.0.1:{port}/v1/messages"
        ab(url, body_file, 100, a.concurrency)  # warm-up: the first call stores the state the others continue
        before = sum(cpu_seconds(p) for p in process_tree(serve.pid))
        result = ab(url, body_file, a.calls, a.concurrency)
        used = sum(cpu_seconds(p) for p in process_tree(serve.pid)) - before
        return result, used, paths(port)
    finally:
        serve.terminate()
        serve.wait(30)


def config_texts(a):
    out = []
    for path in a.config:
        text = open(path).read()
        # Relative files (the meter's fit, the price table) resolve against the config's own folder.
        text = re.sub(r"^(\s*file:\s*)(\S+)", lambda m: m.group(1) + os.path.join(os.path.dirname(os.path.abspath(path)), m.group(2)),
                      text, flags=re.M)
        text = re.sub(r"^prices:\s*(\S+)", lambda m: "prices: " + os.path.join(os.path.dirname(os.path.abspath(path)), m.group(1)),
                      text, flags=re.M)
        text = re.sub(r"^(\s*dir:\s*)\S+", r"\1archive", text, flags=re.M)
        out.append((os.path.basename(path), text))
    if a.every_call and out:
        name, text = out[0]
        out.append((name + " + a stage that sees every call", text.replace("\npipeline:\n", "\npipeline:\n" + EVERY_CALL, 1)))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("compactor")
    p.add_argument("--calls", type=int, default=3000)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--config", action="append",
                   help="a config to run serve with (repeatable); default: configs/default.yaml and configs/demo-50k-chars.yaml")
    p.add_argument("--no-every-call", dest="every_call", action="store_false",
                   help="leave out the phase of the first config with a stage that sees every call")
    a = p.parse_args()
    if shutil.which("ab") is None:
        print("ab not found: apt-get install apache2-utils")
        return 1
    a.config = a.config or [os.path.join(ROOT, "configs", "default.yaml"), os.path.join(ROOT, "configs", "demo-50k-chars.yaml")]
    work = tempfile.mkdtemp(prefix="compactor-throughput-")
    body = body_of(SESSION)
    body_file = os.path.join(work, "body.json")
    open(body_file, "w").write(body)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; body {len(body)} bytes "
          f"({os.path.basename(SESSION)}); ab -k -c {a.concurrency} -n {a.calls}")
    upstream_port = free_port()
    nginx = start_nginx(work, upstream_port)
    rows = []
    try:
        ab(f"http://127.0.0.1:{upstream_port}/v1/messages", body_file, 100, a.concurrency)
        rate, p50, p99, failed, cpu = ab(f"http://127.0.0.1:{upstream_port}/v1/messages", body_file, a.calls, a.concurrency)
        rows.append(("straight to nginx", rate, p50, p99, failed, cpu, None, ""))
        for name, text in config_texts(a):
            (rate, p50, p99, failed, cpu), serve_cpu, taken = serve_phase(a, work, f"serve{len(rows)}", text, upstream_port, body_file)
            rows.append((f"through serve, {name}", rate, p50, p99, failed, cpu, serve_cpu, taken))
    finally:
        nginx.terminate()
        nginx.wait(10)
    print(f"| path | calls/s | p50 ms | p99 ms | failed | ab CPU s | serve CPU ms/call | paths (serve's /metrics) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, rate, p50, p99, failed, cpu, serve_cpu, taken in rows:
        per_call = f"{serve_cpu * 1000 / a.calls:.2f}" if serve_cpu is not None else ""
        print(f"| {name} | {rate:,.0f} | {p50} | {p99} | {failed} | {cpu:.2f} | {per_call} | {taken} |")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
