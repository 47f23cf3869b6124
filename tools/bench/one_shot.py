#!/usr/bin/env python3
"""One-shot throughput: one `compactor run` process per session of a corpus (a benchmark, not a test).

Each build given runs every session below --corpus once per round (`compactor run --config CONFIG
--input SESSION --output OUT`, in a fresh working folder per round, so each build's archive starts
empty); builds alternate their order from round to round so that a change in the machine's load
falls on all of them. With --floor, the architecture's floor runs the same sessions too:
compactor_bench_process_floor, a process that loads six plugins, forks and copies the input to
the output atomically, and does none of Compactor's work (what no `compactor run` can go below).

Prints, per build, the medians over the rounds of the wall time (sessions/s) and of the CPU time
of the processes (user + system, from wait4), the CPU per process, the exit codes, and each
build's ratio to the first build given.

usage: one_shot.py --corpus DIR [--rounds N] [--floor BUILD_DIR] NAME=COMPACTOR[,CONFIG] [NAME=...]...
  CONFIG defaults to configs/demo-50k-chars.yaml two folders above COMPACTOR (a source tree's build/bin).
  example: tools/bench/one_shot.py --corpus ../shared/corpus --floor build \\
             now=build/bin/compactor base=/tmp/base/build/bin/compactor
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def sessions(corpus):
    files = [p for p in Path(corpus).rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".traj")]
    return sorted(str(p) for p in files)


def one_round(command_for, files):
    """Runs one process per session; returns (wall s, cpu s, {exit code: count})."""
    work = tempfile.mkdtemp(prefix="one-shot-")
    cpu, codes = 0.0, {}
    start = time.perf_counter()
    try:
        for f in files:
            p = subprocess.Popen(command_for(f, work), cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(p.pid, 0)
            cpu += usage.ru_utime + usage.ru_stime
            code = os.waitstatus_to_exitcode(status)
            codes[code] = codes.get(code, 0) + 1
        return time.perf_counter() - start, cpu, codes
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--floor", metavar="BUILD_DIR", help="a build folder holding bin/compactor_bench_process_floor")
    ap.add_argument("builds", nargs="+", metavar="NAME=COMPACTOR[,CONFIG]")
    args = ap.parse_args()

    runs = {}
    for spec in args.builds:
        name, sep, rest = spec.partition("=")
        if not sep or not name:
            sys.exit(f"one_shot.py: {spec!r}: expected NAME=COMPACTOR[,CONFIG]")
        binary, _, config = rest.partition(",")
        binary = os.path.abspath(binary)
        config = os.path.abspath(config or os.path.join(os.path.dirname(binary), "..", "..", "configs", "demo-50k-chars.yaml"))
        for path in (binary, config):
            if not os.path.isfile(path):
                sys.exit(f"one_shot.py: {name}: no such file {path}")
        runs[name] = (lambda b, c: lambda f, w: [b, "run", "--config", c, "--input", f, "--output", w + "/out.json"])(binary, config)
    if args.floor:
        floor = os.path.abspath(os.path.join(args.floor, "bin", "compactor_bench_process_floor"))
        plugins = os.path.abspath(os.path.join(args.floor, "bench-floor-plugins"))
        if not os.path.isfile(floor):
            sys.exit(f"one_shot.py: --floor: no such file {floor} (build the benchmarks)")
        runs["floor"] = lambda f, w: [floor, plugins, f, w + "/out.json"]

    files = sessions(args.corpus)
    if not files:
        sys.exit(f"one_shot.py: {args.corpus}: no *.json, *.jsonl or *.traj session below it")
    names = list(runs)
    results = {n: [] for n in names}
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            wall, cpu, codes = one_round(runs[name], files)
            results[name].append((wall, cpu, codes))
            print(f"round {r + 1}/{args.rounds} {name}: {len(files) / wall:.1f} sessions/s, CPU {cpu:.3f} s", file=sys.stderr, flush=True)

    first = names[0]
    base_wall = statistics.median(w for w, _, _ in results[first])
    base_cpu = statistics.median(c for _, c, _ in results[first])
    print(f"{len(files)} sessions below {args.corpus}, {args.rounds} rounds, medians")
    print(f"| run | sessions/s | wall s | CPU s | CPU per process | exit codes | vs {first}: wall, CPU |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        wall = statistics.median(w for w, _, _ in results[name])
        cpu = statistics.median(c for _, c, _ in results[name])
        codes = ", ".join(f"{k}: {v}" for k, v in sorted(results[name][-1][2].items()))
        print(f"| {name} | {len(files) / wall:.1f} | {wall:.2f} | {cpu:.3f} | {cpu / len(files) * 1000:.1f} ms | {codes} | "
              f"{base_wall / wall:.2f}×, {base_cpu / cpu:.2f}× |")


if __name__ == "__main__":
    main()
