#!/usr/bin/env python3
"""`compactor serve` under load, against the upstream alone, in one run (a benchmark, not a test).

N agents at once, each replaying a real session call by call (a model call before each assistant
message; each request is the whole uncompacted history up to it, streamed, as Claude Code sends
it), against a loopback upstream that answers every call after a fixed delay. Three phases:
  1. direct: the agents talk to the upstream itself;
  2. serve: the same calls through `compactor serve` (a fresh archive);
  3. kill (optional, --kill): the same through a server that is `kill -9`ed half-way and started
     again on the same archive folder and port; the agents retry refused connections (as the SDKs
     do) and go on; the conversations continue from their stored state.
It prints, per phase, calls/s, p50/p99 latency and time to first byte, errors, the server's and
its zygote's peak memory and the workers' peak (from /metrics); for the kill phase, state hits
after the restart and whether any state file is torn. With --check every body the upstream got
through the server is checked with `compactor check`.

With --redis, the script starts a Redis server of its own (redis-server on a free loopback port,
append-only file, in its scratch folder) and the servers keep state and blobs there
(`store: {kind: redis}`); with --replicas N, N servers run, each in a folder of its own, and each
agent's calls alternate across them (a load balancer without affinity). Then the kill phase kills
one replica (kill -9) half-way and does not start it again (the others continue its
conversations), and --kill-redis adds a phase that kills Redis half-way and starts it again from
its append-only file two seconds later. The store's latency (state get and put, blobs) is printed
from the servers' compactor_serve_store_seconds histograms, as the bucket that holds p50 and p99.

usage: serve_load.py COMPACTOR CONFIG CORPUS [--agents 16] [--calls 30] [--delay-ms 200] [--kill] [--check]
                     [--redis] [--replicas N] [--kill-redis]
  CORPUS: a folder of sessions `compactor import` reads (Claude Code logs, OpenAI histories); the
  first AGENTS sessions (sorted by path) with at least CALLS calls are used.
"""
import argparse
import http.client
import http.server
import json
import multiprocessing
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SSE = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
       b'"content":[],"model":"m","usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
       b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
       b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}\n\n'
       b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
       b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\n'
       b'event: message_stop\ndata: {"type":"message_stop"}\n\n')


def run_upstream(port_queue, delay_ms, record_dir, stop):
    """The model API stand-in: reads the body, waits `delay_ms`, answers an event stream."""
    counter = [0]
    lock = threading.Lock()

    class Upstream(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else the head and the body wait on each other's ACK (40 ms)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if record_dir.value:
                with lock:
                    counter[0] += 1
                    n = counter[0]
                with open(os.path.join(record_dir.value.decode(), f"{n:06d}.json"), "wb") as f:
                    f.write(body)
            time.sleep(delay_ms / 1000)
            try:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(SSE)))
                self.end_headers()
                self.wfile.write(SSE)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server was killed mid-call (the kill phase): its client retries

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer.daemon_threads = True
    http.server.ThreadingHTTPServer.request_queue_size = 256
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    port_queue.put(server.server_address[1])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stop.wait()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else 0.0


def load_sessions(cli, corpus, agents, calls):
    """Each agent's session as its list of request bodies (bytes), one per call. With fewer usable
    sessions than agents, sessions are used again, each copy made a conversation of its own by a
    first message that names its agent (so no two agents share continuity state)."""
    files = []
    for root, _, names in os.walk(corpus):
        for n in names:
            if n.endswith((".jsonl", ".json", ".traj")):
                files.append(os.path.join(root, n))
    usable = []
    for f in sorted(files):
        r = subprocess.run([cli, "import", "--input", f, "--output", "-"], capture_output=True, text=True)
        if r.returncode != 0 or not r.stdout.strip():
            continue
        doc = json.loads(r.stdout)
        messages = doc["messages"] if isinstance(doc, dict) else doc
        system = doc.get("system") if isinstance(doc, dict) else None
        answers = [i for i in range(1, len(messages)) if messages[i]["role"] == "assistant"]
        if len(answers) >= calls:
            usable.append((os.path.relpath(f, corpus), messages, system, answers[:calls]))
        if len(usable) == agents:
            break
    sessions = []
    for k in range(agents if usable else 0):
        name, messages, system, answers = usable[k % len(usable)]
        if k >= len(usable):
            messages = [{"role": "user", "content": f"(agent {k + 1})"}, {"role": "assistant", "content": "ok"}] + messages
            answers = [i + 2 for i in answers]
        bodies = []
        for i in answers:
            body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": True}
            if system:
                body["system"] = system
            body["messages"] = messages[:i]
            bodies.append(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
        sessions.append((name, bodies))
    return sessions, len(usable)


class Agent(threading.Thread):
    """One agent: its session's calls in order on one keep-alive connection; a refused connection
    or a 529/503 is retried (after Retry-After), as the SDKs do."""

    def __init__(self, port_of, bodies, start_gate, on_call=None):
        super().__init__(daemon=True)
        self.port_of, self.bodies, self.gate, self.on_call = port_of, bodies, start_gate, on_call
        self.latency, self.ttfb, self.errors, self.retries, self.overloaded = [], [], [], 0, 0
        self.statuses = {}

    def run(self):
        self.gate.wait()
        conns = {}  # a keep-alive connection per replica
        for k, body in enumerate(self.bodies):
            if self.on_call:
                self.on_call(k)
            started = time.monotonic()
            deadline = started + 120
            while True:
                port = self.port_of(k)
                conn = conns.get(port)
                try:
                    if conn is None:
                        conn = conns[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    conn.request("POST", "/v1/messages", body=body,
                                 headers={"content-type": "application/json", "x-api-key": "bench",
                                          "anthropic-version": "2023-06-01"})
                    r = conn.getresponse()
                    first = r.read(1)
                    t_first = time.monotonic()
                    rest = r.read()
                    if r.status in (529, 503):
                        self.overloaded += 1
                        time.sleep(float(r.getheader("retry-after", "1")))
                        continue
                    status = r.getheader("x-compactor-status", "direct")
                    self.statuses[status] = self.statuses.get(status, 0) + 1
                    if r.status != 200 or not (first + rest).endswith(b"message_stop\"}\n\n"):
                        self.errors.append(f"call {k + 1}: HTTP {r.status}")
                    self.latency.append(time.monotonic() - started)
                    self.ttfb.append(t_first - started)
                    break
                except (ConnectionError, http.client.HTTPException, OSError) as e:
                    if conn is not None:
                        conn.close()
                    conns.pop(port, None)
                    self.retries += 1
                    if time.monotonic() > deadline:
                        self.errors.append(f"call {k + 1}: {e}")
                        break
                    time.sleep(0.1)
        for conn in conns.values():
            conn.close()


def start_serve(cli, config, upstream, port, workdir, name):
    err = open(os.path.join(workdir, name + ".err"), "a")
    p = subprocess.Popen([cli, "serve", "--config", config, "--listen", f"127.0.0.1:{port}", "--upstream", upstream, "--upstream", f"openai={upstream}"],
                         stdout=subprocess.PIPE, stderr=err, cwd=workdir, text=True)
    line = p.stdout.readline()
    if "listening" not in line:
        raise SystemExit(f"compactor serve did not start: {line} (see {err.name})")
    return p


def peak_kb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    try:
        return [int(c) for c in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    except OSError:
        return []


def metric(text, name):
    total = 0.0
    for m in re.finditer(rf"^{name}(?:\{{[^}}]*\}})? ([0-9.e+-]+)$", text, re.M):
        total += float(m.group(1))
    return total


def start_redis(workdir):
    """A Redis server of the benchmark's own, on a free loopback port; its port and process."""
    port = free_port()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", workdir, "--save", "",
                          "--appendonly", "yes", "--logfile", os.path.join(workdir, "redis.log")])
    for _ in range(200):
        if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True).stdout.strip() == "PONG":
            return port, p
        time.sleep(0.05)
    raise SystemExit("redis-server did not start (apt-get install redis-server)")


def bucket_pct(text, name, labels, q):
    """The upper bound of the histogram bucket holding the q-quantile, summed over the servers' texts."""
    counts = {}
    for t in text:
        for m in re.finditer(rf'^{name}_bucket\{{{labels},le="([^"]+)"\}} ([0-9.e+-]+)$', t, re.M):
            counts[m.group(1)] = counts.get(m.group(1), 0) + float(m.group(2))
    if not counts:
        return None
    total = counts.get("+Inf", 0)
    for le in sorted((k for k in counts if k != "+Inf"), key=float):
        if total and counts[le] >= q * total:
            return float(le) * 1000
    return float("inf")


def run_phase(sessions, port_of, on_call=None):
    gate = threading.Event()
    agents = [Agent(port_of, bodies, gate, on_call) for _, bodies in sessions]
    for a in agents:
        a.start()
    started = time.monotonic()
    gate.set()
    for a in agents:
        a.join()
    wall = time.monotonic() - started
    lat = [x for a in agents for x in a.latency]
    ttfb = [x for a in agents for x in a.ttfb]
    statuses = {}
    for a in agents:
        for k, v in a.statuses.items():
            statuses[k] = statuses.get(k, 0) + v
    return {
        "calls": len(lat), "wall": wall, "rate": len(lat) / wall if wall else 0,
        "p50": pct(lat, 0.5) * 1000, "p99": pct(lat, 0.99) * 1000,
        "ttfb50": pct(ttfb, 0.5) * 1000, "ttfb99": pct(ttfb, 0.99) * 1000,
        "errors": [e for a in agents for e in a.errors], "retries": sum(a.retries for a in agents),
        "overloaded": sum(a.overloaded for a in agents), "statuses": statuses,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("config")
    ap.add_argument("corpus")
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--delay-ms", type=int, default=200)
    ap.add_argument("--kill", action="store_true", help="add the kill -9 and restart phase")
    ap.add_argument("--check", action="store_true", help="check every forwarded body with compactor check")
    ap.add_argument("--redis", action="store_true", help="keep state and blobs in a Redis server of the script's own")
    ap.add_argument("--replicas", type=int, default=1, help="servers the agents' calls alternate across")
    ap.add_argument("--kill-redis", action="store_true", help="add a phase that kills Redis half-way (with --redis)")
    a = ap.parse_args()
    cli = os.path.abspath(a.cli)

    sessions, distinct = load_sessions(cli, a.corpus, a.agents, a.calls)
    if not sessions:
        print(f"no session of {a.corpus} has {a.calls} calls", file=sys.stderr)
        return 2
    if distinct < a.agents:
        print(f"{distinct} sessions of {a.corpus} have {a.calls} calls: the other agents replay them again as "
              f"conversations of their own", file=sys.stderr)
    work = tempfile.mkdtemp(prefix="compactor-serve-load-")
    record = multiprocessing.Array("c", 4096)
    stop = multiprocessing.Event()
    ports = multiprocessing.Queue()
    upstream_proc = multiprocessing.Process(target=run_upstream, args=(ports, a.delay_ms, record, stop), daemon=True)
    upstream_proc.start()
    upstream_port = ports.get(timeout=30)
    upstream = f"http://127.0.0.1:{upstream_port}"
    results = {}
    try:
        text = open(a.config).read()
        text = re.sub(r"(?m)^archive:.*(\n  dir:.*)?$", "archive: {dir: archive}", text)
        # The meter's fit and the price table are relative to the config's own folder.
        here = os.path.dirname(os.path.abspath(a.config))
        text = re.sub(r"(?m)^(\s*file:\s*)(\S+)", lambda m: m.group(1) + os.path.join(here, m.group(2)), text)
        text = re.sub(r"(?m)^prices:\s*(\S+)", lambda m: "prices: " + os.path.join(here, m.group(1)), text)
        redis = None
        if a.redis:
            redis_port, redis_proc = start_redis(work)
            redis = {"port": redis_port, "proc": redis_proc}
            secret = os.path.join(work, "state.secret")  # what serve signs its state in Redis with
            open(secret, "w").write(os.urandom(24).hex() + "\n")
            text = (re.sub(r"(?m)^store:.*(\n  .*)*", "", text) +
                    f'\nstore: {{kind: redis, url: "redis://127.0.0.1:{redis_port}/0", state_secret_file: "{secret}"}}\n')

        print(f"{len(sessions)} agents x {a.calls} calls ({sum(len(b) for _, b in sessions)} calls), upstream delay "
              f"{a.delay_ms} ms, config {a.config}, {os.cpu_count()} cores", flush=True)

        results["direct"] = run_phase(sessions, lambda _call: upstream_port)

        def serve_phase(name, kill, kill_redis=False):
            d = os.path.join(work, name)
            os.makedirs(d)
            cfg = os.path.join(d, "c.yaml")
            open(cfg, "w").write(text)
            sent = os.path.join(d, "sent")
            os.makedirs(sent)
            record.value = sent.encode()
            dirs = [d] if a.replicas == 1 else [os.path.join(d, f"r{i}") for i in range(a.replicas)]
            for r_dir in dirs:
                os.makedirs(r_dir, exist_ok=True)
            ports = [free_port() for _ in dirs]
            procs = [start_serve(cli, cfg, upstream, ports[i], dirs[i], f"{name}{i}") for i in range(len(dirs))]
            state = {"procs": procs, "killed": False, "peak": [0, 0], "down": set()}
            lock = threading.Lock()
            total = sum(len(b) for _, b in sessions)
            done = [0]

            def sample():
                while not state.get("stop"):
                    for p in state["procs"]:
                        state["peak"][0] = max(state["peak"][0], peak_kb(p.pid))
                        for z in children(p.pid):
                            state["peak"][1] = max(state["peak"][1], peak_kb(z))
                    time.sleep(0.05)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()

            def restart_redis():
                time.sleep(2)
                redis["proc"] = subprocess.Popen(["redis-server", "--port", str(redis["port"]), "--bind", "127.0.0.1",
                                                  "--dir", work, "--save", "", "--appendonly", "yes",
                                                  "--logfile", os.path.join(work, "redis.log")])

            def on_call(_):
                with lock:
                    done[0] += 1
                    if state["killed"] or done[0] < total // 2 or not (kill or kill_redis):
                        return
                    state["killed"] = True
                    if kill_redis:
                        redis["proc"].send_signal(signal.SIGKILL)
                        redis["proc"].wait()
                        threading.Thread(target=restart_redis, daemon=True).start()
                    elif len(procs) > 1:  # one replica gone for good: the others take its calls
                        procs[0].send_signal(signal.SIGKILL)
                        procs[0].wait()
                        state["down"].add(ports[0])
                    else:
                        procs[0].send_signal(signal.SIGKILL)
                        procs[0].wait()
                        procs[0] = start_serve(cli, cfg, upstream, ports[0], d, name)

            def port_of(k):
                live = [p for p in ports if p not in state["down"]]
                return live[k % len(live)]

            r = run_phase(sessions, port_of, on_call)
            live = [i for i in range(len(ports)) if ports[i] not in state["down"]]
            texts = [urllib.request.urlopen(f"http://127.0.0.1:{ports[i]}/metrics", timeout=60).read().decode() for i in live]
            state["stop"] = True
            sampler.join()
            r["server_peak_mb"] = state["peak"][0] / 1024
            r["zygote_peak_mb"] = state["peak"][1] / 1024
            r["worker_peak_mb"] = max(metric(t, "compactor_serve_worker_peak_rss_bytes") for t in texts) / 2**20
            r["state_hits"] = sum(metric(t, 'compactor_serve_state_total\\{result="hit"\\}') for t in texts)
            r["state_misses"] = sum(metric(t, 'compactor_serve_state_total\\{result="miss"\\}') for t in texts)
            r["fast"] = sum(metric(t, 'compactor_serve_path_seconds_count\\{path="fast"\\}') for t in texts)
            r["worker"] = sum(metric(t, 'compactor_serve_path_seconds_count\\{path="worker"\\}') for t in texts)
            r["store_errors"] = sum(metric(t, "compactor_serve_store_errors_total") for t in texts)
            kind = "redis" if redis else "folder"
            r["store_ms"] = {op: (bucket_pct(texts, "compactor_serve_store_seconds", f'kind="{kind}",op="{op}"', 0.5),
                                  bucket_pct(texts, "compactor_serve_store_seconds", f'kind="{kind}",op="{op}"', 0.99))
                             for op in ("state_get", "state_put", "blobs_put")}
            for i in live:
                procs[i].send_signal(signal.SIGTERM)
                procs[i].wait(timeout=60)
            # Torn state: every stored history must read back as JSON (atomic writes).
            torn = 0
            files = []
            for r_dir in dirs:
                state_dir = os.path.join(r_dir, "archive", "serve-state")
                files += [os.path.join(state_dir, f) for f in (os.listdir(state_dir) if os.path.isdir(state_dir) else [])]
            for path in files:
                if ".tmp." in path:
                    continue
                data = open(path, "rb").read()
                if data != b"=":
                    try:
                        json.loads(data)
                    except ValueError:
                        torn += 1
            r["state_files"] = len([f for f in files if ".tmp." not in f])
            r["state_torn"] = torn
            r["temp_left"] = sum(1 for r_dir in dirs for root, _, names in os.walk(os.path.join(r_dir, "archive"))
                                 for n in names if ".tmp." in n)
            if a.check:
                bad = []
                for f in sorted(os.listdir(sent)):
                    c = subprocess.run([cli, "check", "--input", os.path.join(sent, f)], capture_output=True, text=True)
                    if c.returncode != 0:
                        bad.append(f"{f}: {c.stderr.strip().splitlines()[-1] if c.stderr.strip() else c.returncode}")
                r["checked"] = len(os.listdir(sent))
                r["check_failures"] = bad
            record.value = b""
            return r

        results["serve"] = serve_phase("serve", False)
        if a.kill:
            results["kill"] = serve_phase("kill", True)
        if a.kill_redis and redis:
            results["kill-redis"] = serve_phase("kill-redis", False, True)
    finally:
        stop.set()
        if redis:
            redis["proc"].send_signal(signal.SIGTERM)
            redis["proc"].wait(timeout=30)
        upstream_proc.join(timeout=5)
        shutil.rmtree(work, ignore_errors=True)

    d = results["direct"]
    print("| phase | calls | calls/s | p50 ms | p99 ms | first byte p50 | first byte p99 | errors | 529/503 retried |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['calls']} | {r['rate']:.1f} | {r['p50']:.0f} | {r['p99']:.0f} | {r['ttfb50']:.0f} | "
              f"{r['ttfb99']:.0f} | {len(r['errors'])} | {r['overloaded']} |")
    for name in ("serve", "kill", "kill-redis"):
        if name not in results:
            continue
        r = results[name]
        print(f"{name}: p50 {r['p50'] - d['p50']:+.0f} ms against the upstream alone, p99 {r['p99'] / max(d['p99'], 1e-9):.2f}x; "
              f"statuses {r['statuses']}; calls without a worker {r.get('fast', 0):.0f}, through one {r.get('worker', 0):.0f}; "
              f"state hits {r['state_hits']:.0f}, misses {r['state_misses']:.0f}"
              f"{' (after the restart)' if name == 'kill' else ''}; peak memory: server {r['server_peak_mb']:.1f} MB, "
              f"zygote {r['zygote_peak_mb']:.1f} MB, largest worker {r['worker_peak_mb']:.1f} MB; "
              f"{r['state_files']} state files, {r['state_torn']} torn, {r['temp_left']} temporary files left")
        ms = lambda v: "-" if v is None else f"{v:g}"
        print(f"{name}: store ({'redis' if a.redis else 'folder'}, {a.replicas} replica(s)): "
              + ", ".join(f"{op} p50 <= {ms(p50)} ms, p99 <= {ms(p99)} ms" for op, (p50, p99) in r["store_ms"].items())
              + f"; {r['store_errors']:.0f} store errors")
        if "checked" in r:
            print(f"{name}: {r['checked']} forwarded bodies checked, {len(r['check_failures'])} refused"
                  + "".join(f"\n  {x}" for x in r["check_failures"][:10]))
        for e in r["errors"][:10]:
            print(f"{name}: error: {e}")
    return 0 if all(not r["errors"] and not r.get("check_failures") for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
