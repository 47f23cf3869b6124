#!/usr/bin/env python3
"""A 1 GB input, end to end: `compactor generate` writes a ~1 GB session, then
`compactor check` and `compactor run` (the default pipeline at a 400,000-char budget) read it,
and the peak memory of each (the largest process, the forked pipeline child included) must stay
within 4x the input. Prints the figures. Run by .ci/run; too large for ctest on a shared VM.

usage: one_gigabyte.py COMPACTOR_BINARY CONFIGS_DIR [WORK_DIR]
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time


def peak_of(argv, cwd):
    """Runs argv; returns (exit code, seconds, peak RSS bytes of its largest process, the forked
    pipeline child included, stdout). wait4 gives the usage of this one child and the children
    it waited for, not a running maximum over everything this interpreter ran before."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}\n{stdout}{stderr}")
    return proc.returncode, seconds, usage.ru_maxrss * 1024, stdout


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    compactor, configs = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    work = tempfile.mkdtemp(prefix="compactor-1g-", dir=sys.argv[3] if len(sys.argv) > 3 else None)
    try:
        session = os.path.join(work, "session.json")
        subprocess.run([compactor, "generate", "--exchanges", "36000", "--seed", "7", "--output", session], check=True)
        size = os.path.getsize(session)
        with open(os.path.join(configs, "default.yaml")) as f:
            config = f.read()
        config = config.replace("limit: 50000 ", "limit: 400000 ").replace("target: 40000 ", "target: 300000 ")
        config = config.replace("dir: .compactor/archive", "dir: archive")
        with open(os.path.join(work, "c.yaml"), "w") as f:
            f.write(config)
        code, seconds, peak, _ = peak_of([compactor, "check", "--input", session], work)
        print(f"check: {size / 1e9:.2f} GB in, exit {code}, {seconds:.1f} s, peak {peak / 1e9:.2f} GB ({peak / size:.2f}x)")
        if peak > 4 * size:
            sys.exit(f"FAIL: check peaked at {peak / size:.2f}x its input, over 4x")
        code, seconds, peak, out = peak_of(
            [compactor, "run", "--config", "c.yaml", "--input", session, "--output", "out.json"], work)
        print(f"run: {size / 1e9:.2f} GB in, exit {code}, {seconds:.1f} s, peak {peak / 1e9:.2f} GB ({peak / size:.2f}x)")
        print("  " + out.strip().splitlines()[-1])
        if peak > 4 * size:
            sys.exit(f"FAIL: run peaked at {peak / size:.2f}x its input, over 4x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
