#!/usr/bin/env python3
"""Mutation check of the protections: each mutant removes or weakens one protection, and the tests
named for it must fail. A test that passes with its protection removed protects nothing.

    python3 tools/mutants/mutants.py [--list FILE] [--only ID[,ID...]] [--check] [--tree DIR] [--out DIR]
                                     [--jobs N] [--timeout S]

Reads a declarative list (default tools/mutants/mutants.yaml; its head says how to add a mutant),
copies the working tree (tracked and untracked files git does not ignore, so uncommitted work is
included; the node_modules folders linked) into a scratch tree, never touching the working tree
itself, and configures one build there (the default preset, through ccache) that every mutant
reuses. Then:

  1. the baseline: the named targets built unmutated, and every named test run once; a test that
     fails here makes its mutants invalid (they could not be told apart from it);
  2. for each mutant: its edits applied (each `replace` text must occur exactly once, so a list
     gone stale with the code says so instead of testing nothing), its targets built (only those:
     the build reuses everything else), its tests run (each bounded by a timeout: a test that
     hangs without its protection is a kill), the edits undone.

Writes OUT/report.md and OUT/report.json (default build/mutants/ of the working tree): each
mutant's outcome (killed, survived, or a listing error: stale, did not build, baseline failed),
the tests that killed it, and the time taken. --check only validates the list against the
working tree (fast: no copy, no build); that check is a ctest (mutants_list_applies_to_the_code). The
mutants themselves are not part of CI: they rebuild once per mutant.

Exit 0 when every mutant run was killed; 1 when one survived; 2 on a listing error or bad usage.
"""
import argparse
import filecmp
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

try:
    import yaml
except ImportError:  # Debian's python3-yaml (tools/setup.sh --tests installs it)
    sys.exit("mutants: PyYAML is missing (apt-get install python3-yaml, or bash tools/setup.sh --tests)")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_TIMEOUT_S = 300


class ListError(Exception):
    """A list entry that cannot be used as written."""


def load_list(path):
    """The mutants, each with its edits and its tests in one form."""
    try:
        entries = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ListError(f"{path}: {e}")
    if not isinstance(entries, list):
        raise ListError(f"{path}: expected a list of mutants")
    mutants, seen = [], set()
    for n, e in enumerate(entries, start=1):
        where = f"{path}: mutant {n}"
        if not isinstance(e, dict) or not isinstance(e.get("id"), str):
            raise ListError(f"{where}: expected a mapping with an id")
        where = f"{path}: {e['id']}"
        if e["id"] in seen:
            raise ListError(f"{where}: the id is used twice")
        seen.add(e["id"])
        unknown = set(e) - {"id", "protects", "file", "replace", "with", "edits", "gtest", "ctest", "build", "timeout", "env"}
        if unknown:
            raise ListError(f"{where}: unknown keys {sorted(unknown)}")
        edits = e.get("edits") or [{k: e[k] for k in ("file", "replace", "with") if k in e}]
        for edit in edits:
            if not isinstance(edit.get("file"), str) or not isinstance(edit.get("replace"), str) or not isinstance(edit.get("with"), str):
                raise ListError(f"{where}: each edit needs file, replace and with (with may be \"\")")
        tests = tests_of(e, where)
        build = e.get("build") or sorted({t["binary"] for t in tests if t["kind"] == "gtest"})
        if not build:
            raise ListError(f"{where}: a ctest-only mutant names its build targets (build: [...])")
        mutants.append({"id": e["id"], "protects": e.get("protects", ""), "edits": edits, "tests": tests, "build": build,
                        "timeout": int(e.get("timeout", DEFAULT_TIMEOUT_S)), "env": {str(k): str(v) for k, v in (e.get("env") or {}).items()}})
    return mutants


def tests_of(e, where):
    """gtest: "BINARY:FILTER" (or a list of them); ctest: "REGEX" (or a list)."""
    tests = []
    for spec in as_list(e.get("gtest")):
        binary, _, pattern = spec.partition(":")
        if not binary or not pattern:
            raise ListError(f"{where}: gtest: expected BINARY:FILTER, got {spec!r}")
        tests.append({"kind": "gtest", "binary": binary, "filter": pattern, "name": spec})
    for regex in as_list(e.get("ctest")):
        tests.append({"kind": "ctest", "regex": regex, "name": f"ctest -R {regex}"})
    if not tests:
        raise ListError(f"{where}: no test named (gtest: or ctest:)")
    return tests


def as_list(v):
    return [] if v is None else v if isinstance(v, list) else [v]


def check_edits(mutant, root):
    """Why the mutant's edits cannot apply to the tree at `root`, or None."""
    for edit in mutant["edits"]:
        path = root / edit["file"]
        if not path.is_file():
            return f"{edit['file']}: no such file"
        count = path.read_text().count(edit["replace"])
        if count != 1:
            return f"{edit['file']}: the text to replace occurs {count} times (expected once): {edit['replace'][:80]!r}"
    return None


def sync_tree(tree):
    """Copies the working tree's files into `tree` (only those that changed, so the build there stays
    incremental), removes the ones no longer there, links the node_modules folders."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                            capture_output=True).stdout.decode().split("\0")
    files = {f for f in listed if f and (REPO / f).is_file() and not (REPO / f).is_symlink()}
    manifest = tree / ".mutants-files"
    before = set(manifest.read_text().splitlines()) if manifest.exists() else set()
    for gone in before - files:
        (tree / gone).unlink(missing_ok=True)
    for f in sorted(files):
        src, dst = REPO / f, tree / f
        if dst.exists() and filecmp.cmp(src, dst, shallow=False):
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        os.utime(dst)  # newer than what the last build saw
    manifest.write_text("\n".join(sorted(files)))
    for modules in [REPO / "tools/tokenizer-data/node_modules", *sorted((REPO / "tests/clients").glob("*/node_modules"))]:
        link = tree / modules.relative_to(REPO)
        if modules.is_dir() and not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(modules)


def run(cmd, cwd, log, timeout=None, env=None):
    """Runs `cmd` in a process group of its own, output appended to `log`; (exit code, output,
    seconds). On timeout the group is killed and the code is None."""
    start = time.monotonic()
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            text, _ = p.communicate(timeout=timeout)
            code = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            text, _ = p.communicate()
            code = None
        text = text.decode(errors="replace")
        out.write(text)
    return code, text, time.monotonic() - start


def configure(tree, log, jobs):
    if (tree / "build/CMakeCache.txt").exists():
        return
    code, text, _ = run(["cmake", "--preset", "default", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache",
                         "-DCMAKE_C_COMPILER_LAUNCHER=ccache"], tree, log)
    if code != 0:
        sys.exit(f"mutants: cmake could not configure the scratch tree ({log}):\n{text[-2000:]}")


def build(tree, targets, log, jobs):
    code, text, seconds = run(["cmake", "--build", "build", "-j", str(jobs), "--target", *targets], tree, log)
    return code == 0, text, seconds


def run_test(tree, test, log, timeout, extra_env):
    """(passed, failing test names or the reason, seconds)."""
    env = dict(os.environ, **extra_env)
    if test["kind"] == "gtest":
        cmd = [str(tree / "build/bin" / test["binary"]), f"--gtest_filter={test['filter']}"]
    else:
        cmd = ["ctest", "--test-dir", "build", "-R", test["regex"], "--no-tests=error", "--output-on-failure", "--timeout", str(timeout)]
    code, text, seconds = run(cmd, tree, log, timeout=timeout, env=env)
    if test["kind"] == "gtest" and re.search(r"^\[==========\] Running 0 tests", text, re.M):
        return False, [f"no test matches {test['filter']}"], seconds
    if code == 0:
        return True, [], seconds
    if code is None:
        return False, [f"{test['name']} (timed out after {timeout} s: it hung)"], seconds
    if test["kind"] == "gtest":
        names = sorted(set(re.findall(r"^\[  FAILED  \] (\S+) \(\d+ ms\)$", text, re.M)))
    else:
        names = sorted(set(re.findall(r"^\s*\d+ - (\S+) \((?:Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)", text, re.M)))
    if not names:
        names = [f"{test['name']} (exit {code}" + (f", signal {-code}" if code < 0 else "") + ")"]
    return False, names, seconds


def apply_edits(mutant, tree):
    """Applies the edits; returns the original texts to put back."""
    originals = {}
    for edit in mutant["edits"]:
        path = tree / edit["file"]
        text = originals.setdefault(path, path.read_text())
        current = path.read_text()
        path.write_text(current.replace(edit["replace"], edit["with"], 1))
        originals[path] = text
    return originals


def restore(originals):
    for path, text in originals.items():
        path.write_text(text)


def baseline(mutants, tree, log, jobs):
    """Builds every target and runs every test once, unmutated: {test name: (passed, why)}."""
    targets = sorted({t for m in mutants for t in m["build"]})
    ok, text, _ = build(tree, targets, log, jobs)
    if not ok:
        sys.exit(f"mutants: the unmutated tree does not build ({log}):\n{text[-3000:]}")
    results = {}
    for m in mutants:
        for t in m["tests"]:
            if t["name"] not in results:
                passed, why, seconds = run_test(tree, t, log, m["timeout"], m["env"])
                results[t["name"]] = (passed, why, seconds)
                print(f"baseline {'ok  ' if passed else 'FAIL'} {t['name']} ({seconds:.1f} s)", flush=True)
    return results


def run_mutant(m, tree, log, jobs, base):
    result = {"id": m["id"], "protects": m["protects"], "files": sorted({e["file"] for e in m["edits"]}),
              "tests": [t["name"] for t in m["tests"]], "killed_by": [], "build_s": 0.0, "test_s": 0.0}
    broken = [t["name"] for t in m["tests"] if not base[t["name"]][0]]
    stale = check_edits(m, tree)
    if broken or stale:
        result.update(status="baseline failed" if broken else "stale", detail=stale or f"fails unmutated: {', '.join(broken)}")
        return result
    originals = apply_edits(m, tree)
    try:
        ok, text, result["build_s"] = build(tree, m["build"], log, jobs)
        if not ok:
            errors = [l for l in text.splitlines() if " error: " in l][:3]
            result.update(status="did not build", detail=" | ".join(errors) or "see the log")
            return result
        for t in m["tests"]:
            passed, why, seconds = run_test(tree, t, log, m["timeout"], m["env"])
            result["test_s"] += seconds
            if not passed:
                result["killed_by"] += why
        result["status"] = "killed" if result["killed_by"] else "survived"
        return result
    finally:
        restore(originals)


def write_report(out, results, started, listed):
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    listed = os.path.relpath(listed, REPO) if str(listed).startswith(str(REPO)) else listed
    (out / "report.json").write_text(json.dumps({"list": str(listed), "seconds": round(time.monotonic() - started, 1),
                                                 "summary": counts, "mutants": results}, indent=2) + "\n")
    lines = [f"# Mutants ({len(results)}: {summary})", "",
             f"List: `{listed}`; {time.monotonic() - started:.0f} s in all. Killed: a named test failed with the protection removed.", "",
             "| mutant | protects | file | outcome | killed by | build s | test s |", "|---|---|---|---|---|---:|---:|"]
    for r in results:
        outcome = r["status"] + (f": {r['detail']}" if r.get("detail") else "")
        lines.append(f"| {r['id']} | {r['protects']} | {', '.join(r['files'])} | {outcome} | {'<br>'.join(r['killed_by'])} | "
                     f"{r['build_s']:.0f} | {r['test_s']:.1f} |")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", default=str(HERE / "mutants.yaml"))
    parser.add_argument("--only", help="comma-separated ids")
    parser.add_argument("--check", action="store_true", help="validate the list against the working tree, and stop")
    parser.add_argument("--tree", default=str(REPO / "build/mutants/tree"), help="the scratch copy (reused between runs)")
    parser.add_argument("--out", default=str(REPO / "build/mutants"))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    try:
        mutants = load_list(args.list)
    except ListError as e:
        print(f"mutants: {e}", file=sys.stderr)
        return 2
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {m["id"] for m in mutants}
        if unknown:
            print(f"mutants: no mutant named {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        mutants = [m for m in mutants if m["id"] in wanted]
    if args.check:
        problems = [f"{m['id']}: {why}" for m in mutants if (why := check_edits(m, REPO))]
        for p in problems:
            print(f"mutants: {p}", file=sys.stderr)
        print(f"mutants: {len(mutants) - len(problems)} of {len(mutants)} apply to the working tree")
        return 2 if problems else 0

    started = time.monotonic()
    tree, out = Path(args.tree).resolve(), Path(args.out).resolve()
    if tree == REPO or REPO in tree.parents and not str(tree).startswith(str(REPO / "build")):
        print("mutants: the scratch tree must not be the working tree (put it under build/ or elsewhere)", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    log = out / "mutants.log"
    log.write_text("")
    tree.mkdir(parents=True, exist_ok=True)
    sync_tree(tree)
    configure(tree, log, args.jobs)
    base = baseline(mutants, tree, log, args.jobs)
    results = []
    for m in mutants:
        r = run_mutant(m, tree, log, args.jobs, base)
        results.append(r)
        print(f"{r['status']:>15}  {m['id']}  {'; '.join(r['killed_by']) or r.get('detail', '')}", flush=True)
        write_report(out, results, started, args.list)
    counts = write_report(out, results, started, args.list)
    print(f"mutants: {out / 'report.md'}")
    if any(s not in ("killed", "survived") for s in counts):
        return 2
    return 1 if counts.get("survived") else 0


if __name__ == "__main__":
    sys.exit(main())
