#!/usr/bin/env python3
"""Runs the commands the documentation shows, so that they cannot rot.

    run_doc_commands.py --source ROOT --build BUILD --scratch DIR [FILE.md ...]

Without files it reads ROOT/README.md and ROOT/docs/*.md. In each file, fenced blocks are run in
order, in one scratch folder per file (so a block may use what an earlier block of the same page
wrote), with `build` linked to BUILD, `configs`, `tests`, `tools` and `examples` linked to the
source tree's, and BUILD/bin first on PATH (so `compactor …` and `build/bin/compactor …` both
name the binary under test):

- ```sh blocks run as one bash script (`set -euo pipefail`) and must exit 0, or with the status a
  first-line `# exit: N` names. A first line `# needs: WHAT` (an API key, a live agent, a model
  server, root) skips the block and says so.
- ```console blocks are transcripts: each `$ command` runs (stdout and stderr together) and its
  output must be the lines that follow it, where `…` in an expected line stands for any text and
  a duration such as `(0.05 ms)` or `2.08 s` matches any duration.
- Any other block (a synopsis, YAML, an output shown without its command) is not run.

The steps that set up and build the project (`bash tools/setup.sh`, `cmake --preset P`,
`cmake --build --preset P`) and `bash tools/test.sh` (which runs this test) are taken as done, since
the build under test exists: their presets must exist in CMakePresets.json and their scripts must
parse (`bash -n`), so a renamed preset or script still fails here.

Exits 1 on the first failing block, after naming the file, the block's line and what differed;
0 when every block passed. Prints how many blocks ran and were skipped.

With --expect-every-block-to-fail (the runner's own test, on a page of broken commands) every
block runs, and the exit is 0 only if each one failed, so a runner that passes a broken command
fails its test.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|µs|s)\b")
BLOCK_TIMEOUT_S = 600


class Block:
    def __init__(self, tag, line, lines):
        self.tag, self.line, self.lines = tag, line, lines


def blocks_of(path):
    """The fenced blocks of a Markdown file: tag, first line number (1-based), body lines."""
    out, tag, start, body = [], None, 0, []
    for number, text in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        fence = re.match(r"^(\s*)```(\S*)\s*$", text)
        if tag is None and fence:
            tag, start, body = fence.group(2), number, []
        elif tag is not None and re.match(r"^\s*```\s*$", text):
            out.append(Block(tag, start, body))
            tag = None
        elif tag is not None:
            body.append(text)
    if tag is not None:
        raise SystemExit(f"{path}:{start}: a fenced block that never closes")
    return out


def presets(source):
    data = json.loads((source / "CMakePresets.json").read_text())
    return ({p["name"] for p in data.get("configurePresets", [])}, {p["name"] for p in data.get("buildPresets", [])})


def project_step(words, source):
    """None when `words` is not a set-up or build step; else an error text ('' when the step is sound)."""
    configure, build = presets(source)
    if words[:2] == ["cmake", "--preset"] and len(words) >= 3:
        return "" if words[2] in configure else f"no configure preset {words[2]!r} in CMakePresets.json"
    if words[:3] == ["cmake", "--build", "--preset"] and len(words) >= 4:
        return "" if words[3] in build else f"no build preset {words[3]!r} in CMakePresets.json"
    if len(words) >= 2 and words[0] == "bash" and words[1] in ("tools/setup.sh", "tools/test.sh"):
        script = source / words[1]
        if not script.is_file():
            return f"{words[1]} does not exist"
        syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        return "" if syntax.returncode == 0 else f"{words[1]} does not parse: {syntax.stderr.strip()}"
    return None


def without_project_steps(script, source):
    """The script with its set-up and build steps replaced by `true`, or an error text."""
    out = []
    for line in script:
        parts = re.split(r"(\s*&&\s*)", line)
        kept = []
        for part in parts:
            if re.fullmatch(r"\s*&&\s*", part):
                kept.append(part)
                continue
            try:
                words = shlex.split(part)
            except ValueError:
                words = []
            problem = project_step(words, source)
            if problem:
                return None, problem
            kept.append("true" if problem == "" else part)
        out.append("".join(kept))
    return out, None


def directive(lines, name):
    if lines and lines[0].startswith(f"# {name}:"):
        return lines[0].split(":", 1)[1].strip()
    return None


def run(command, cwd, env):
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=BLOCK_TIMEOUT_S)


def line_matches(expected, actual):
    expected, actual = DURATION.sub("<duration>", expected), DURATION.sub("<duration>", actual)
    pattern = "".join(".*" if piece == "…" else re.escape(piece) for piece in re.split(r"(…)", expected))
    return re.fullmatch(pattern, actual) is not None


def check_console(block, cwd, env):
    """Runs each `$ command` of a transcript; an error text, or None when every output matched."""
    steps, current = [], None
    for text in block.lines:
        if text.startswith("$ "):
            current = (text[2:], [])
            steps.append(current)
        elif current is None:
            return "a console block must start with a `$ command` line"
        else:
            current[1].append(text)
    for command, expected in steps:
        result = run(command, cwd, env)
        text = result.stdout.decode("utf-8", "replace").rstrip("\n")
        actual = text.split("\n") if text else []
        while expected and expected[-1] == "":
            expected.pop()
        if len(actual) != len(expected) or not all(line_matches(e, a) for e, a in zip(expected, actual)):
            return (f"`{command}` printed (exit {result.returncode}):\n" + "\n".join(actual) +
                    "\n--- but the page shows:\n" + "\n".join(expected))
    return None


def check_sh(block, cwd, env, source):
    script, problem = without_project_steps(block.lines, source)
    if problem:
        return problem
    expected_exit = int(directive(block.lines, "exit") or 0)
    result = run("set -eu\n" + "\n".join(script), cwd, env)
    if result.returncode != expected_exit:
        output = result.stdout.decode("utf-8", "replace")
        return f"exited {result.returncode}, not {expected_exit}; its output:\n{output[-4000:]}"
    return None


def scratch_for(page, scratch_root, source, build):
    folder = scratch_root / page.stem
    subprocess.run(["rm", "-rf", str(folder)], check=True)
    folder.mkdir(parents=True)
    (folder / "build").symlink_to(build.resolve())
    for name in ("configs", "tests", "tools", "examples"):
        (folder / name).symlink_to((source / name).resolve())
    return folder


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True, type=Path)
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--scratch", required=True, type=Path)
    parser.add_argument("--expect-every-block-to-fail", action="store_true")
    parser.add_argument("pages", nargs="*", type=Path)
    args = parser.parse_args()
    pages = args.pages or [args.source / "README.md", *sorted((args.source / "docs").glob("*.md"))]
    env = dict(os.environ)
    env["PATH"] = f"{(args.build / 'bin').resolve()}:{env['PATH']}"
    env.pop("COMPACTOR_LOG", None)
    ran = skipped = failed = 0
    for page in pages:
        cwd = scratch_for(page, args.scratch, args.source, args.build)
        for block in blocks_of(page):
            if block.tag not in ("sh", "console"):
                continue
            needs = directive(block.lines, "needs")
            if needs:
                print(f"skipped {page.name}:{block.line}: needs {needs}")
                skipped += 1
                continue
            try:
                failure = (check_console(block, cwd, env) if block.tag == "console"
                           else check_sh(block, cwd, env, args.source))
            except subprocess.TimeoutExpired:
                failure = f"still running after {BLOCK_TIMEOUT_S} s"
            ran += 1
            if failure:
                print(f"FAIL {page}:{block.line}: {failure}", file=sys.stderr)
                failed += 1
                if not args.expect_every_block_to_fail:
                    return 1
            elif args.expect_every_block_to_fail:
                print(f"NOT FAILED {page}:{block.line}: a broken block passed", file=sys.stderr)
    if args.expect_every_block_to_fail:
        print(f"doc commands: {failed} of {ran} broken blocks reported")
        return 0 if ran > 0 and failed == ran else 1
    print(f"doc commands: {ran} blocks ran and passed, {skipped} skipped, in {len(pages)} pages")
    return 0 if ran > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
