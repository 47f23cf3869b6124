#!/usr/bin/env python3
"""A 1 GB input, end to end: the test tool compactor_generate_session writes a ~1 GB
session, then `compactor check` and `compactor run` (the default pipeline at a fixed
100,000-token window) read it, and the peak memory of each (the largest process, the forked pipeline child
included) must stay within 4x the input. Prints the figures. Run by .ci/run; too large for ctest
on a shared VM.

usage: one_gigabyte.py COMPACTOR_BINARY GENERATE_SESSION_BINARY CONFIGS_DIR [WORK_DIR]
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


def replace_once(text, old, new):
    """The config's line, replaced; a default.yaml that no longer has it fails here, by name,
    not later as a confusing run error."""
    if text.count(old) != 1:
        sys.exit(f"FAIL: configs/default.yaml has {text.count(old)} occurrences of {old!r}, expected 1")
    return text.replace(old, new)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    compactor, generate, configs = (os.path.abspath(a) for a in sys.argv[1:4])
    work = tempfile.mkdtemp(prefix="compactor-1g-", dir=os.path.abspath(sys.argv[4]) if len(sys.argv) > 4 else None)
    try:
        session = os.path.join(work, "session.json")
        subprocess.run([generate, "--exchanges", "36000", "--seed", "7", "--output", session], check=True)
        size = os.path.getsize(session)
        with open(os.path.join(configs, "default.yaml")) as f:
            config = f.read()
        # The generated session names no model, so the window is fixed (100,000 tokens, a
        # trigger near 320,000 chars); the config's own files are named where they are, since
        # the copy lives in a scratch folder.
        config = replace_once(config, "window: auto ", "window: 100000 ")
        config = replace_once(config, "file: fits/claude-code.yaml ", f"file: {configs}/fits/claude-code.yaml ")
        config = replace_once(config, "prices: prices.yaml", f"prices: {configs}/prices.yaml")
        config = replace_once(config, "dir: .compactor/archive", "dir: archive")
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
