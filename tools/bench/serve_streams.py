#!/usr/bin/env python3
"""Many agents each holding one streamed model call open through `compactor serve`, against the
same load straight to the upstream, in one run (a benchmark, not a test).

An agent sends one Anthropic Messages request (a real session's history, cut at a user message,
up to --max-body bytes) with "stream": true and reads the answer to its end. The loopback upstream
answers every call with a server-sent event stream of --events events spread over --seconds (the
first at once). Agents start staggered over one stream's length, so at the peak all of them hold
a stream open. Each of --runs rounds has two phases, the same agents and bodies in each:
  1. direct: the agents talk to the upstream itself;
  2. serve:  the same calls through `compactor serve --config CONFIG` (its log at info level).
It prints, per round and phase, answered / refused (a 529 or 503 from serve's limits) / failed,
time to the first and the last body byte (p50, p99), and what may make the tail: the CPU the
load generator (these agents) and the upstream took, and the agents' own event loop's lag (p99:
how late a 10 ms timer fired, a delay every agent's measurement carries); for serve, from its
log, how long calls waited for and ran in a pipeline and waited for the upstream's first byte
(p50, p99), its peak threads, resident memory, descriptors and CPU (the pipelines' zygote and
workers apart). Then the median over the rounds of the first-byte p99 difference, beside the
direct phase's own p99, and the targets each figure is held to. --json FILE writes the figures.

usage: serve_streams.py COMPACTOR CONFIG SESSIONS_DIR [--agents 4000] [--seconds 30] [--events 30]
                        [--max-body 120000] [--runs 3] [--json FILE]
  SESSIONS_DIR: Anthropic-form sessions (JSON arrays of messages, as tests/data holds).
Exit status: 0 when every target is met, 1 when one is not, 2 on bad usage.
"""
import argparse
import asyncio
import glob
import json
import multiprocessing
import os
import re
import resource
import signal
import statistics
import socket
import subprocess
import sys
import tempfile
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def event(i, last):
    if i == 0:
        data = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                                     "model": "m", "usage": {"input_tokens": 1, "output_tokens": 1}}}
        name = "message_start"
    elif last:
        data, name = {"type": "message_stop"}, "message_stop"
    else:
        data = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"token {i} "}}
        name = "content_block_delta"
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


# ---- the upstream (a process of its own) ---------------------------------------------------------

async def upstream_serve(port, seconds, events, ready):
    interval = seconds / max(1, events - 1)

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                m = re.search(rb"(?i)content-length:\s*(\d+)", head)
                await reader.readexactly(int(m.group(1)) if m else 0)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                for i in range(events):
                    ev = event(i, i == events - 1)
                    writer.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                    await writer.drain()
                    if i < events - 1:
                        await asyncio.sleep(interval)
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=16384, limit=1 << 22)
    ready.set()
    async with server:
        await server.serve_forever()


def run_upstream(port, seconds, events, ready):
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    asyncio.run(upstream_serve(port, seconds, events, ready))


# ---- the agents ----------------------------------------------------------------------------------

async def read_chunked(reader, on_bytes):
    while True:
        size = int((await reader.readline()).split(b";")[0], 16)
        if size == 0:
            await reader.readline()
            return
        on_bytes(await reader.readexactly(size))
        await reader.readexactly(2)


async def agent(port, body, start_at, results):
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    t0 = time.monotonic()
    first = None
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
        writer.write(b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-type: application/json\r\n"
                     b"x-api-key: sk-ant-bench\r\nanthropic-version: 2023-06-01\r\ncontent-length: %d\r\n\r\n" % (port, len(body)))
        writer.write(body)
        await writer.drain()
        status = int((await reader.readline()).split()[1])
        headers = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            k, _, v = line.decode().partition(":")
            headers[k.strip().lower()] = v.strip()
        if status != 200:
            await reader.read(int(headers.get("content-length", "0")) or -1)
            writer.close()
            results.append(("refused" if status in (429, 503, 529) else "failed", status, None, None))
            return

        def seen(_):
            nonlocal first
            if first is None:
                first = time.monotonic() - t0

        await read_chunked(reader, seen)
        writer.close()
        results.append(("answered", status, first, time.monotonic() - t0))
    except Exception as e:  # noqa: BLE001: a failed agent is a figure, not a crash
        results.append(("failed", repr(e), first, None))


async def loop_lag(stop, lags):
    """How late a 10 ms timer fires in the agents' own loop: a delay every measurement carries."""
    while not stop.is_set():
        t = time.monotonic()
        await asyncio.sleep(0.01)
        lags.append(time.monotonic() - t - 0.01)


async def run_agents(port, bodies, seconds):
    results, lags, stop = [], [], asyncio.Event()
    start = time.monotonic() + 0.5
    n = len(bodies)
    monitor = asyncio.create_task(loop_lag(stop, lags))
    await asyncio.gather(*(agent(port, bodies[i], start + seconds * i / n, results) for i in range(n)))
    stop.set()
    await monitor
    return results, lags


def own_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def phase(port, bodies, seconds, upstream_pid):
    """One phase's figures: the agents' results, and the CPU the agents and the upstream took."""
    cpu0, up0, t = own_cpu_seconds(), cpu_seconds(upstream_pid), time.monotonic()
    results, lags = asyncio.run(run_agents(port, bodies, seconds))
    wall = time.monotonic() - t
    f = summary(results)
    f.update({"wall_s": wall, "agents_cpu_s": own_cpu_seconds() - cpu0, "upstream_cpu_s": cpu_seconds(upstream_pid) - up0,
              "loop_lag_p99_ms": percentile(lags, 99) * 1000, "loop_lag_max_ms": max(lags, default=0) * 1000})
    return f


# ---- the server's resources --------------------------------------------------------------------

class Watch(threading.Thread):
    """Samples serve's threads, resident memory and open descriptors until stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.stop, self.threads, self.rss_kb, self.fds = pid, threading.Event(), 0, 0, 0

    def run(self):
        while not self.stop.wait(0.2):
            try:
                status = open(f"/proc/{self.pid}/status").read()
                self.threads = max(self.threads, int(re.search(r"Threads:\s+(\d+)", status).group(1)))
                self.rss_kb = max(self.rss_kb, int(re.search(r"VmHWM:\s+(\d+)", status).group(1)))
                self.fds = max(self.fds, len(os.listdir(f"/proc/{self.pid}/fd")))
            except (OSError, AttributeError):
                return


def cpu_seconds(pid, children=False):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    own = int(fields[11]) + int(fields[12])
    return (own + (int(fields[13]) + int(fields[14]) if children else 0)) / TICK


def zygote_of(pid):
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        for child in open(task).read().split():
            return int(child)
    return None


# ---- bodies from real sessions -----------------------------------------------------------------

def bodies_from(sessions_dir, count, max_body):
    """Request bodies of real histories, cut at a user message, of many sizes up to max_body."""
    cuts = []
    for path in sorted(glob.glob(os.path.join(sessions_dir, "*.json"))):
        try:
            messages = json.load(open(path))
        except (OSError, ValueError):
            continue
        if not isinstance(messages, list):
            continue
        raws = [json.dumps(m, separators=(",", ":")) for m in messages]
        size = 0
        for i, raw in enumerate(raws):
            size += len(raw) + 1
            if size > max_body - 200:
                break
            if messages[i].get("role") == "user" and i >= 2 and not any(
                    b.get("type") == "tool_result" for b in messages[i + 1:i + 2] if isinstance(b, dict)):
                cuts.append(raws[:i + 1])
    if not cuts:
        sys.exit(f"serve_streams.py: no session in {sessions_dir} gives a request body")
    bodies = []
    for i in range(count):
        raws = cuts[(i * 7919) % len(cuts)]
        bodies.append(('{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"system":"You are a coding agent.",'
                       '"messages":[' + ",".join(raws) + "]}").encode())
    return bodies


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def summary(results):
    answered = [r for r in results if r[0] == "answered"]
    firsts = [r[2] for r in answered]
    lasts = [r[3] for r in answered]
    return {"answered": len(answered), "refused": sum(r[0] == "refused" for r in results),
            "failed": sum(r[0] == "failed" for r in results),
            "first_p50_ms": percentile(firsts, 50) * 1000, "first_p99_ms": percentile(firsts, 99) * 1000,
            "last_p50_s": percentile(lasts, 50), "last_p99_s": percentile(lasts, 99),
            "failures": sorted({str(r[1]) for r in results if r[0] == "failed"})[:5]}


def serve_log_figures(err_file):
    """From serve's per-call lines, p50 and p99 in ms: the wait for a pipeline (queue_us), the
    pipeline's run after it (worker_us is both), and the upstream's first byte after forwarding."""
    queue, run, first_byte = [], [], []
    for line in open(err_file, errors="replace"):
        m = re.search(r"worker_us=(\d+) first_byte_us=(-?\d+) forward_us=\d+ queue_us=(\d+)", line)
        if m:
            queue.append(int(m.group(3)) / 1000)
            run.append((int(m.group(1)) - int(m.group(3))) / 1000)
            if int(m.group(2)) >= 0:
                first_byte.append(int(m.group(2)) / 1000)
    out = {}
    for name, values in (("queue", queue), ("pipeline", run), ("upstream_first", first_byte)):
        out[f"{name}_p50_ms"], out[f"{name}_p99_ms"] = percentile(values, 50), percentile(values, 99)
    return out


def serve_phase(a, bodies, up_port, upstream_pid):
    work = tempfile.mkdtemp(prefix="serve-streams-")
    err = os.path.join(work, "serve.err")
    serve = subprocess.Popen([os.path.abspath(a.compactor), "serve", "--config", os.path.abspath(a.config), "--listen", "127.0.0.1:0",
                              "--upstream", f"http://127.0.0.1:{up_port}"], cwd=work, stdout=subprocess.PIPE,
                             stderr=open(err, "w"), text=True, env=dict(os.environ, COMPACTOR_LOG="info"))
    line = serve.stdout.readline()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not m:
        sys.exit(f"serve_streams.py: compactor serve did not start: {line} (see {err})")
    watch = Watch(serve.pid)
    watch.start()
    cpu0 = cpu_seconds(serve.pid)
    f = phase(int(m.group(1)), bodies, a.seconds, upstream_pid)
    watch.stop.set()
    watch.join()
    zygote = zygote_of(serve.pid)
    f.update({"peak_threads": watch.threads, "peak_rss_mb": watch.rss_kb / 1024, "peak_fds": watch.fds,
              "cpu_s": cpu_seconds(serve.pid) - cpu0,
              "pipelines_cpu_s": cpu_seconds(zygote, children=True) if zygote else float("nan")})
    serve.send_signal(signal.SIGTERM)
    serve.wait(60)
    f.update(serve_log_figures(err))
    return f


def print_round(i, d, s):
    print(f"\nround {i + 1}{'':8}{'answered':>9}{'refused':>9}{'failed':>8}{'first p50':>11}{'first p99':>11}{'last p50':>10}{'last p99':>10}"
          f"{'agents CPU':>12}{'upstream CPU':>14}{'loop lag p99':>14}")
    for name, f in (("upstream alone", d), ("through serve", s)):
        print(f"{name:16}{f['answered']:>9}{f['refused']:>9}{f['failed']:>8}{f['first_p50_ms']:>8.1f} ms{f['first_p99_ms']:>8.1f} ms"
              f"{f['last_p50_s']:>8.2f} s{f['last_p99_s']:>8.2f} s{f['agents_cpu_s']:>10.1f} s{f['upstream_cpu_s']:>12.1f} s"
              f"{f['loop_lag_p99_ms']:>11.1f} ms")
        if f["failures"]:
            print(f"{'':16}failures: {', '.join(f['failures'])}")
    print(f"serve: the wait for a pipeline p50 {s['queue_p50_ms']:.1f} ms, p99 {s['queue_p99_ms']:.1f} ms; the pipeline p50 "
          f"{s['pipeline_p50_ms']:.1f} ms, p99 {s['pipeline_p99_ms']:.1f} ms; the upstream's first byte after forwarding p50 "
          f"{s['upstream_first_p50_ms']:.1f} ms, p99 {s['upstream_first_p99_ms']:.1f} ms; peak "
          f"{s['peak_threads']} threads, RSS {s['peak_rss_mb']:.0f} MB, {s['peak_fds']} file descriptors, CPU {s['cpu_s']:.1f} s "
          f"(pipelines' zygote and workers: {s['pipelines_cpu_s']:.1f} s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("compactor")
    ap.add_argument("config")
    ap.add_argument("sessions")
    ap.add_argument("--agents", type=int, default=4000)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--events", type=int, default=30)
    ap.add_argument("--max-body", type=int, default=120000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    bodies = bodies_from(a.sessions, a.agents, a.max_body)
    print(f"serve_streams: {a.agents} agents, one {a.seconds:g} s stream each ({a.events} events), started over {a.seconds:g} s; "
          f"bodies {min(map(len, bodies)) // 1000}-{max(map(len, bodies)) // 1000} KB from {a.sessions}; {a.runs} rounds; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)

    up_port = free_port()
    ready = multiprocessing.Event()
    upstream = multiprocessing.Process(target=run_upstream, args=(up_port, a.seconds, a.events, ready), daemon=True)
    upstream.start()
    ready.wait(30)
    rounds = []
    try:
        for i in range(a.runs):
            d = phase(up_port, bodies, a.seconds, upstream.pid)
            s = serve_phase(a, bodies, up_port, upstream.pid)
            rounds.append({"direct": d, "serve": s})
            print_round(i, d, s)
    finally:
        upstream.terminate()

    diffs = [r["serve"]["first_p99_ms"] - r["direct"]["first_p99_ms"] for r in rounds]
    median_diff = statistics.median(diffs)
    direct_p99 = [r["direct"]["first_p99_ms"] for r in rounds]
    print(f"\nfirst byte p99 through serve minus straight, per round: {', '.join(f'+{x:.1f}' for x in diffs)} ms; median "
          f"+{median_diff:.1f} ms (the direct phase's own p99: {', '.join(f'{x:.1f}' for x in direct_p99)} ms)")
    checks = [
        ("all answered", all(r["serve"]["answered"] == a.agents for r in rounds), f"{min(r['serve']['answered'] for r in rounds)}/{a.agents}"),
        ("none refused", all(r["serve"]["refused"] == 0 for r in rounds), str(max(r["serve"]["refused"] for r in rounds))),
        ("first byte p99 +<= 50 ms (median of rounds)", median_diff <= 50, f"+{median_diff:.1f} ms"),
        ("last byte p99 <= 1.05x", all(r["serve"]["last_p99_s"] <= 1.05 * r["direct"]["last_p99_s"] for r in rounds),
         f"{max(r['serve']['last_p99_s'] / r['direct']['last_p99_s'] for r in rounds):.3f}x"),
        ("server RSS <= 400 MB", all(r["serve"]["peak_rss_mb"] <= 400 for r in rounds),
         f"{max(r['serve']['peak_rss_mb'] for r in rounds):.0f} MB"),
        ("threads <= 64", all(r["serve"]["peak_threads"] <= 64 for r in rounds), str(max(r["serve"]["peak_threads"] for r in rounds))),
    ]
    for name, ok, value in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {name}: {value}")
    figures = {"rounds": rounds, "first_p99_diff_ms": diffs, "median_first_p99_diff_ms": median_diff,
               "checks": {name: ok for name, ok, _ in checks}}
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(figures, f, indent=2)
        os.replace(tmp, a.json)
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
