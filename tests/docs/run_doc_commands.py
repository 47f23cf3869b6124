#!/usr/bin/env python3
"""Runs the commands the documentation shows, as written, so that they cannot rot.

    run_doc_commands.py --source ROOT --build BUILD --scratch DIR [FILE.md ...]

Without files it reads ROOT/README.md, ROOT/docs/*.md and ROOT/docs/design/*.md. In each file, fenced blocks are run in
order, in one scratch folder per file (so a block may use what an earlier block of the same page
wrote), with `build` linked to BUILD, `configs`, `tests`, `tools` and `examples` linked to the
source tree's, BUILD/bin first on PATH (so `compactor …` and `build/bin/compactor …` both name the
binary under test) and HOME a folder of the page's own:

- ```sh blocks run as one bash script (`set -eu`) and must exit 0, or with the status a first-line
  `# exit: N` names. A first line `# needs: WHAT` says what a reader needs (an agent, a key); the
  block still runs, against the stand-ins below. Only a block whose first line is
  `# not run: WHY` (one line: why it truly cannot run here) is not run; the runner lists each
  such block with its reason.
- ```console blocks are transcripts: each `$ command` runs (stdout and stderr together) and its
  output must be the lines that follow it, where `…` in an expected line stands for any text and
  a duration such as `(0.05 ms)` or `2.08 s` matches any duration.
- A block whose info string gives a file (```toml title="~/.codex/config.toml") is that file: it
  is written there (`~` is the page's HOME) for the blocks after it.
- Any other block (a synopsis, YAML, an output shown without its command) is not run.

What a command reaches over the network is a stand-in on loopback that this runner starts:

- The runner re-runs itself in private network and mount namespaces (`unshare -rnm`) when it can:
  loopback is the only network there (nothing can reach the internet), `127.0.0.1:8088` is free
  whatever else runs on the machine, and `/srv` is an empty folder of its own (the docs' archive
  folder, /srv/compactor/archive, is made there). Without them, blocks that need them say so and
  are listed as not run; in CI (CI=true) that is a failure, unless COMPACTOR_CI_WITHOUT_NAMESPACES
  is set to say the CI cannot give them.
- An HTTPS proxy (`https_proxy`): libcurl, which `compactor serve` and the model summarizers use,
  sends every https upstream through it. It records the host each request was for and answers
  with a refusal (it cannot speak TLS as that host), which `serve` returns to its client in the
  API's error shape.
- Agents on PATH (`claude`, `qwen`, `gemini`, `codex`: tests/docs/agent_stand_in.py): each reads
  the environment or config the real agent reads (ANTHROPIC_BASE_URL, OPENAI_BASE_URL,
  GOOGLE_GEMINI_BASE_URL, ~/.codex/config.toml), refuses to run when it is missing, and sends one
  conversation to that base URL, which must answer as `compactor serve` (x-compactor-status).
  `claude mcp add … -- COMMAND` starts COMMAND as an MCP server and lists its tools.
- The keys they need (ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENAI_MODEL, GEMINI_API_KEY) are set
  to test values.

Every block runs in a process group of its own, ended when the block ends (a `serve … &` with it).

The steps that set up and build the project (`bash tools/setup.sh`, `cmake --preset P`,
`cmake --build --preset P`) and `bash tools/test.sh` (which runs this test) are taken as done, since
the build under test exists: their presets must exist in CMakePresets.json and their scripts must
parse (`bash -n`), so a renamed preset or script still fails here. `cmake --install` installs
under DESTDIR, a folder of the page's own.

Exits 1 after naming each failing block (the file, the block's line and what differed); 0 when
every block passed. Prints how many blocks ran and, one a line, each block not run with its reason.

With --expect-every-block-to-fail (the runner's own test, on a page of broken commands) every
block runs, and the exit is 0 only if each one failed, so a runner that passes a broken command
fails its test.
"""
import argparse
import ctypes
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|µs|s)\b")
BLOCK_TIMEOUT_S = 300
HERE = Path(__file__).resolve().parent
AGENTS = ("claude", "qwen", "gemini", "codex")
TEST_KEYS = {"ANTHROPIC_API_KEY": "sk-ant-doc-test", "OPENAI_API_KEY": "sk-doc-test", "OPENAI_MODEL": "gpt-doc-test",
             "GEMINI_API_KEY": "doc-test-gemini-key"}
IN_NAMESPACE = "COMPACTOR_DOC_TEST_NAMESPACE"


class Block:
    def __init__(self, tag, line, lines, title=None):
        self.tag, self.line, self.lines, self.title = tag, line, lines, title


def blocks_of(path):
    """The fenced blocks of a Markdown file: tag, first line number (1-based), body lines, title."""
    out, tag, start, body, title = [], None, 0, [], None
    for number, text in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        fence = re.match(r"^(\s*)```(\S*)(.*)$", text)
        if tag is None and fence:
            tag, start, body = fence.group(2), number, []
            named = re.search(r'title="([^"]+)"', fence.group(3))
            title = named.group(1) if named else None
        elif tag is not None and re.match(r"^\s*```\s*$", text):
            out.append(Block(tag, start, body, title))
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
                words = shlex.split(part, comments=True)
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


class UpstreamStandIn:
    """An HTTPS proxy on loopback: records the host of each CONNECT and refuses it."""

    def __init__(self):
        self.hosts, self.lock = [], threading.Lock()
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            conn, _ = self.server.accept()
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn):
        with conn:
            conn.settimeout(5)
            head = b""
            try:
                while b"\r\n\r\n" not in head and len(head) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    head += chunk
            except OSError:
                return
            request = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            if len(request) >= 2:
                with self.lock:
                    self.hosts.append(request[1])
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def take(self):
        with self.lock:
            hosts, self.hosts = self.hosts, []
        return hosts


def become_subreaper():
    """The block's orphans (a server it started in the background) become this process's
    children, reaped as they end, rather than init's, which may take a second to reap them."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def reap_orphans():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_group(process):
    """Ends the block's process group (a server it left in the background) and waits for it: a
    moment to stop on SIGTERM, then SIGKILL (a server's drain is not what the page shows)."""
    for sig, wait in ((signal.SIGTERM, 0.3), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            process.poll()  # the shell itself, once it has exited, is reaped here
            reap_orphans()
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def run(command, cwd, env):
    """The block's exit status and output. Its output goes to a file, not a pipe: a server it left
    in the background keeps its end open, and the block is over when its own shell is."""
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            process.wait(timeout=BLOCK_TIMEOUT_S)
        finally:
            end_group(process)
            process.wait()
        out.seek(0)
        return process.returncode, out.read()


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
        code, output = run(command, cwd, env)
        text = output.decode("utf-8", "replace").rstrip("\n")
        actual = text.split("\n") if text else []
        while expected and expected[-1] == "":
            expected.pop()
        if len(actual) != len(expected) or not all(line_matches(e, a) for e, a in zip(expected, actual)):
            return (f"`{command}` printed (exit {code}):\n" + "\n".join(actual) +
                    "\n--- but the page shows:\n" + "\n".join(expected))
    return None


def check_sh(block, cwd, env, source):
    script, problem = without_project_steps(block.lines, source)
    if problem:
        return problem
    expected_exit = int(directive(block.lines, "exit") or 0)
    code, output = run("set -eu\n" + "\n".join(script), cwd, env)
    if code != expected_exit:
        return f"exited {code}, not {expected_exit}; its output:\n{output.decode('utf-8', 'replace')[-4000:]}"
    return None


def scratch_for(page, scratch_root, source, build):
    try:
        name = str(page.resolve().relative_to(source.resolve()).with_suffix("")).replace("/", "-")
    except ValueError:
        name = page.stem
    folder = scratch_root / name
    subprocess.run(["rm", "-rf", str(folder)], check=True)
    (folder / "home").mkdir(parents=True)
    (folder / "build").symlink_to(build.resolve())
    for name in ("configs", "tests", "tools", "examples"):
        (folder / name).symlink_to((source / name).resolve())
    return folder


def write_titled(block, cwd, home):
    path = Path(block.title.replace("~", str(home), 1)) if block.title.startswith("~") else cwd / block.title
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(block.lines) + "\n", encoding="utf-8")


def isolation_missing(block):
    """Why a block cannot run outside the namespaces, or None: a fixed port, /srv."""
    text = "\n".join(block.lines)
    if os.environ.get(IN_NAMESPACE) == "1":
        return None
    if re.search(r"\bcompactor serve\b", text) or "/srv/" in text:
        return "needs a private network and /srv (unshare -rnm was refused here)"
    return None


def environment(build, page_dir, proxy_port, agents_dir):
    env = dict(os.environ)
    env["PATH"] = f"{(build / 'bin').resolve()}:{agents_dir}:{env['PATH']}"
    env.pop("COMPACTOR_LOG", None)
    env["HOME"] = str(page_dir / "home")
    env["DESTDIR"] = str(page_dir / "destdir")
    for name in ("https_proxy", "HTTPS_PROXY"):
        env[name] = f"http://127.0.0.1:{proxy_port}"
    for name in ("no_proxy", "NO_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "CODEX_HOME"):
        env.pop(name, None)
    env.update(TEST_KEYS)
    return env


def agents_on_path(scratch_root):
    folder = scratch_root / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    for name in AGENTS:
        link = folder / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(HERE / "agent_stand_in.py")
    return folder


def enter_namespaces():
    """Re-runs this script in private network and mount namespaces when it can; returns when it
    cannot (or already runs in them)."""
    if os.environ.get(IN_NAMESPACE) is not None:
        if os.environ[IN_NAMESPACE] == "1":
            subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
            subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/srv"], check=True)
            os.makedirs("/srv/compactor/archive", exist_ok=True)
        return
    probe = subprocess.run(["unshare", "-rnm", "true"], capture_output=True)
    env = dict(os.environ)
    if probe.returncode != 0:
        if os.environ.get("CI") == "true" and "COMPACTOR_CI_WITHOUT_NAMESPACES" not in os.environ:
            print("FAIL doc commands: no private namespaces here (unshare -rnm refused), and CI=true: the blocks that need "
                  "them must run in CI (set COMPACTOR_CI_WITHOUT_NAMESPACES=1 to say this CI cannot give them)", file=sys.stderr)
            sys.exit(1)
        env[IN_NAMESPACE] = "0"
        print("doc commands: no private namespaces here (unshare -rnm refused); the blocks that need them are not run")
        os.environ[IN_NAMESPACE] = "0"
        return
    env[IN_NAMESPACE] = "1"
    sys.stdout.flush()
    os.execvpe("unshare", ["unshare", "-rnm", sys.executable, __file__, *sys.argv[1:]], env)


def run_page(page, args, proxy, agents):
    """Runs a page's blocks: (ran, failed, not run as (place, reason))."""
    cwd = scratch_for(page, args.scratch, args.source, args.build)
    env = environment(args.build, cwd, proxy.port, agents)
    ran, failed, not_run = 0, 0, []
    for block in blocks_of(page):
        if block.title:
            write_titled(block, cwd, Path(env["HOME"]))
            continue
        if block.tag not in ("sh", "console"):
            continue
        why = directive(block.lines, "not run") or isolation_missing(block)
        if why:
            not_run.append((f"{page.name}:{block.line}", why))
            continue
        proxy.take()
        try:
            failure = check_console(block, cwd, env) if block.tag == "console" else check_sh(block, cwd, env, args.source)
        except subprocess.TimeoutExpired:
            failure = f"still running after {BLOCK_TIMEOUT_S} s"
        ran += 1
        hosts = proxy.take()
        if hosts and not failure:
            print(f"{page.name}:{block.line}: upstream stand-in reached for {', '.join(sorted(set(hosts)))}")
        if failure:
            print(f"FAIL {page}:{block.line}: {failure}", file=sys.stderr)
            failed += 1
        elif args.expect_every_block_to_fail:
            print(f"NOT FAILED {page}:{block.line}: a broken block passed", file=sys.stderr)
    return ran, failed, not_run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True, type=Path)
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--scratch", required=True, type=Path)
    parser.add_argument("--expect-every-block-to-fail", action="store_true")
    parser.add_argument("pages", nargs="*", type=Path)
    args = parser.parse_args()
    enter_namespaces()
    become_subreaper()
    args.scratch.mkdir(parents=True, exist_ok=True)
    pages = args.pages or [args.source / "README.md", *sorted((args.source / "docs").glob("*.md")),
                           *sorted((args.source / "docs" / "design").glob("*.md"))]
    proxy, agents = UpstreamStandIn(), agents_on_path(args.scratch)
    ran = failed = 0
    not_run = []
    for page in pages:
        r, f, n = run_page(page, args, proxy, agents)
        ran, failed, not_run = ran + r, failed + f, not_run + n
    if args.expect_every_block_to_fail:
        print(f"doc commands: {failed} of {ran} broken blocks reported")
        return 0 if ran > 0 and failed == ran else 1
    print(f"doc commands: {ran} blocks ran, {failed} failed, {len(not_run)} not run, in {len(pages)} pages")
    for place, why in not_run:
        print(f"  not run {place}: {why}")
    return 0 if ran > 0 and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
