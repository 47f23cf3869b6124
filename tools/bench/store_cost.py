#!/usr/bin/env python3
"""What one conversation costs in the store (a benchmark, not a test).

Replays one session's first CALLS calls (default 100) through `compactor serve`, call by call,
against a loopback upstream, once with the folder store and once with a Redis server of the
script's own (redis-server on a free loopback port, in a scratch folder), and prints what each
store then holds: Redis's used memory before and after, its keys by kind with their MEMORY USAGE
(blobs, continuity state, superseded state that expires within the hour, the gc index), and the
folder's bytes on disk by kind (packs, state).

usage: store_cost.py COMPACTOR CONFIG CORPUS [--calls 100] [--session NAME]
  CORPUS: a folder of sessions `compactor import` reads; the first one with CALLS calls is used
  (or the one whose path contains NAME).
"""
import argparse
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_load import free_port, load_sessions, run_upstream, start_redis, start_serve  # noqa: E402


def redis_cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True).stdout


def used_memory(port):
    return int(re.search(r"used_memory:(\d+)", redis_cli(port, "info", "memory")).group(1))


def replay(cli, config_text, upstream, bodies, workdir):
    os.makedirs(workdir)
    cfg = os.path.join(workdir, "c.yaml")
    open(cfg, "w").write(config_text)
    port = free_port()
    proc = start_serve(cli, cfg, upstream, port, workdir, "serve")
    statuses = {}
    try:
        for body in bodies:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/messages", data=body,
                                         headers={"content-type": "application/json", "x-api-key": "bench"})
            with urllib.request.urlopen(req, timeout=120) as r:
                r.read()
                s = r.headers.get("x-compactor-status", "?")
                statuses[s] = statuses.get(s, 0) + 1
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60).read().decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    hits = re.search(r'compactor_serve_state_total\{result="hit"\} (\S+)', metrics)
    return statuses, float(hits.group(1)) if hits else 0.0


def folder_bytes(root):
    kinds = {"packs and blobs": 0, "state": 0}
    for d, _, names in os.walk(root):
        for n in names:
            kinds["state" if os.path.basename(d) == "serve-state" else "packs and blobs"] += os.path.getsize(os.path.join(d, n))
    return kinds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("config")
    ap.add_argument("corpus")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--session", default="")
    a = ap.parse_args()
    cli = os.path.abspath(a.cli)
    corpus = a.corpus
    if a.session:
        corpus = tempfile.mkdtemp(prefix="compactor-store-cost-pick-")
        for root, _, names in os.walk(a.corpus):
            for n in names:
                if a.session in os.path.join(root, n):
                    shutil.copy(os.path.join(root, n), corpus)
    sessions, _ = load_sessions(cli, corpus, 1, a.calls)
    if not sessions:
        print(f"no session of {a.corpus} has {a.calls} calls", file=sys.stderr)
        return 2
    name, bodies = sessions[0]
    work = tempfile.mkdtemp(prefix="compactor-store-cost-")
    record = multiprocessing.Array("c", 4096)
    stop = multiprocessing.Event()
    ports = multiprocessing.Queue()
    up = multiprocessing.Process(target=run_upstream, args=(ports, 0, record, stop), daemon=True)
    up.start()
    upstream = f"http://127.0.0.1:{ports.get(timeout=30)}"
    text = re.sub(r"(?m)^archive:.*(\n  dir:.*)?$", "", open(a.config).read()) + "\narchive: {dir: archive}\n"
    text = re.sub(r"(?m)^store:.*(\n  .*)*", "", text)
    redis = None
    try:
        sent = sum(len(b) for b in bodies)
        print(f"{name}: {len(bodies)} calls, {sent / 1e6:.1f} MB of requests, config {a.config}")
        statuses, hits = replay(cli, text, upstream, bodies, os.path.join(work, "folder"))
        f = folder_bytes(os.path.join(work, "folder", "archive"))
        print(f"folder: {statuses}, {hits:.0f} state hits; on disk: "
              + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in f.items()) + f", total {sum(f.values()) / 1e6:.2f} MB")
        redis_port, redis_proc = start_redis(work)
        redis = redis_proc
        before = used_memory(redis_port)
        secret = os.path.join(work, "state.secret")  # what serve signs its state in Redis with
        open(secret, "w").write(os.urandom(24).hex() + "\n")
        statuses, hits = replay(cli, text + f'store: {{kind: redis, url: "redis://127.0.0.1:{redis_port}/0", state_secret_file: "{secret}"}}\n',
                                upstream, bodies, os.path.join(work, "redis"))
        after = used_memory(redis_port)
        kinds = {}
        for key in redis_cli(redis_port, "--scan").split():
            kind = key.split(":")[1] if ":" in key else key
            kind = {"b": "blobs", "s": "state", "blobs": "gc index"}.get(kind, kind)
            if kind == "state" and int(redis_cli(redis_port, "ttl", key).strip() or 0) <= 3600:
                kind = "state superseded (gone within the hour)"
            usage = int(redis_cli(redis_port, "memory", "usage", key).strip() or 0)
            n, total = kinds.get(kind, (0, 0))
            kinds[kind] = (n + 1, total + usage)
        print(f"redis: {statuses}, {hits:.0f} state hits; used_memory +{(after - before) / 1e6:.2f} MB; "
              + ", ".join(f"{k}: {n} keys, {t / 1e6:.2f} MB" for k, (n, t) in sorted(kinds.items())))
        scale = 100 / len(bodies)
        lasting = sum(t for k, (n, t) in kinds.items() if "superseded" not in k)
        print(f"per 100 calls: redis +{(after - before) * scale / 1e6:.2f} MB used memory, {lasting * scale / 1e6:.2f} MB of it "
              f"kept past the hour (MEMORY USAGE); folder {sum(f.values()) * scale / 1e6:.2f} MB")
    finally:
        if redis:
            redis.send_signal(signal.SIGTERM)
            redis.wait(timeout=30)
        stop.set()
        up.join(timeout=5)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
