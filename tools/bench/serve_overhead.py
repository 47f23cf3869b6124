#!/usr/bin/env python3
"""Per-call overhead of `compactor serve` (a benchmark, not a test).

Replays a session call by call (a model call before each assistant message; each request is the
whole uncompacted history, as an agent sends it) through two servers in front of a loopback
upstream that answers at once:
  - "continuing": one server whose continuity state is kept (the normal path);
  - "full": a second server whose state folder is removed before every request (every call a
    miss: the pipeline runs on the whole uncompacted history).
Each server logs one line per request with its timings (COMPACTOR_LOG=info); this prints p50 and
p99 of parse, state lookup, stages, the worker (fork + stages + archive syncs + state write, as
the server sees it), the upstream's first byte and forwarding (to the loopback upstream and back), and the stage time of the continuing
path as a share of the full runs' on the same histories.

--routes lists the wire formats each call is sent through, side by side on the same servers:
messages (POST /v1/messages), chat (the history as `compactor import --output-format openai`
writes it, POST /v1/chat/completions) and gemini (as a Gemini generateContent body: each call a
functionCall part with a thoughtSignature, each result a functionResponse part), so an
adapter's own cost (its parse and write) shows beside the Messages API's.

usage: serve_overhead.py COMPACTOR CONFIG SESSION [--calls N] [--routes messages,chat,gemini]
  SESSION: any input `compactor import` reads (messages array, Claude Code log, OpenAI history).
"""
import argparse
import base64
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.request

LINE = re.compile(r"POST (\S+) .*messages=(\d+) continued=(\d+) .*parse_us=(\d+) state_us=(\d+) stages_us=(\d+) worker_us=(\d+) first_byte_us=(-?\d+) forward_us=(\d+)")
GEMINI_PATH = "/v1beta/models/gemini-2.5-pro:generateContent"
PATHS = {"messages": "/v1/messages", "chat": "/v1/chat/completions", "gemini": GEMINI_PATH}


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"id":"msg","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}]}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def start_server(cli, config, upstream, workdir, name):
    err = open(os.path.join(workdir, name + ".err"), "w")
    env = dict(os.environ, COMPACTOR_LOG="info")
    p = subprocess.Popen([cli, "serve", "--config", config, "--listen", "127.0.0.1:0", "--upstream", upstream,
                          "--openai-upstream", upstream, "--gemini-upstream", upstream],
                         stdout=subprocess.PIPE, stderr=err, cwd=workdir, env=env, text=True)
    line = p.stdout.readline()
    port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))
    return p, port, err.name


def gemini_contents(messages):
    """Anthropic messages as Gemini Contents: text as text parts, a tool_use as a signed
    functionCall, a tool_result as a functionResponse naming its call's function."""
    names, contents = {}, []
    for m in messages:
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        parts, signed = [], False
        for b in blocks:
            if b.get("type") == "text":
                parts.append({"text": b["text"]})
            elif b.get("type") == "tool_use":
                names[b["id"]] = b["name"]
                part = {"functionCall": {"id": b["id"], "name": b["name"], "args": b.get("input") or {}}}
                if not signed:
                    part["thoughtSignature"] = base64.b64encode(("sig:" + b["id"]).encode()).decode()
                    signed = True
                parts.append(part)
            elif b.get("type") == "tool_result":
                c = b.get("content")
                text = c if isinstance(c, str) else "\n".join(x.get("text", "") for x in (c or []) if isinstance(x, dict))
                parts.append({"functionResponse": {"id": b["tool_use_id"], "name": names.get(b["tool_use_id"], "tool"),
                                                   "response": {"output": text}}})
        if parts:
            contents.append({"role": "model" if m["role"] == "assistant" else "user", "parts": parts})
    return contents


def body_for(route, messages, chat=None):
    if route == "chat":
        return {"model": "gpt-4.1", "messages": chat}
    if route == "gemini":
        tools = sorted({b["name"] for m in messages if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_use"})
        return {"contents": gemini_contents(messages), "systemInstruction": {"parts": [{"text": "You are a coding agent."}]},
                "tools": [{"functionDeclarations": [{"name": n} for n in tools or ["tool"]]}]}
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages}


def post(port, body, route="messages"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{PATHS[route]}", data=body, method="POST",
                                 headers={"content-type": "application/json", "x-api-key": "bench"})
    with urllib.request.urlopen(req, timeout=600) as r:
        r.read()


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("config")
    ap.add_argument("session")
    ap.add_argument("--calls", type=int, default=0, help="stop after N calls (0: all)")
    ap.add_argument("--routes", default="messages", help="comma-separated: messages, chat, gemini")
    a = ap.parse_args()
    routes = a.routes.split(",")
    cli = os.path.abspath(a.cli)
    messages = json.loads(subprocess.run([cli, "import", "--input", a.session, "--output", "-"], check=True,
                                         capture_output=True, text=True).stdout)
    if isinstance(messages, dict):
        messages = messages["messages"]
    work = tempfile.mkdtemp(prefix="compactor-serve-bench-")
    try:
        text = open(a.config).read()
        for name in ("continuing", "full"):
            os.makedirs(os.path.join(work, name))
            cfg = re.sub(r"(?m)^archive:.*(\n  dir:.*)?$", f"archive: {{dir: {os.path.join(work, name, 'archive')}}}", text)
            open(os.path.join(work, name + ".yaml"), "w").write(cfg)
        up = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
        threading.Thread(target=up.serve_forever, daemon=True).start()
        upstream = f"http://127.0.0.1:{up.server_address[1]}"
        servers = {n: start_server(cli, os.path.join(work, n + ".yaml"), upstream, os.path.join(work, n), n)
                   for n in ("continuing", "full")}
        calls = [i for i in range(1, len(messages)) if messages[i]["role"] == "assistant"]
        if a.calls:
            calls = calls[:a.calls]
        for i in calls:
            chat = None
            if "chat" in routes:
                prefix = os.path.join(work, "prefix.json")
                json.dump(messages[:i], open(prefix, "w"), ensure_ascii=False)
                chat = json.loads(subprocess.run([cli, "import", "--input", prefix, "--output", "-", "--output-format", "openai"],
                                                 check=True, capture_output=True, text=True).stdout)
            for route in routes:
                body = json.dumps(body_for(route, messages[:i], chat), ensure_ascii=False, separators=(",", ":")).encode()
                post(servers["continuing"][1], body, route)
                shutil.rmtree(os.path.join(work, "full", "archive", "serve-state"), ignore_errors=True)
                post(servers["full"][1], body, route)
        results, per_stage = {}, {}
        for n, (p, port, err) in servers.items():
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60).read().decode()
            per_stage[n] = {m.group(1): float(m.group(2)) * 1000 for m in
                            re.finditer(r'compactor_serve_stage_seconds_sum\{stage="([^"]+)"\} ([0-9.e+-]+)', metrics)}
            p.terminate()
            p.wait()
            lines = [m for m in map(LINE.search, open(err)) if m]
            for route in routes:
                results[(n, route)] = [tuple(map(int, m.groups()[1:])) for m in lines if m.group(1) == PATHS[route]]
        print(f"session {a.session}: {len(messages)} messages, {len(calls)} calls, config {a.config}, routes {','.join(routes)}")
        print("| path | route | component | p50 ms | p99 ms |")
        print("|---|---|---|---:|---:|")
        names = ["parse", "state lookup", "stages", "worker (queue, fork, stages, syncs, state write, as the server sees it)", "upstream's first byte", "forwarding"]
        for (n, route), rows in results.items():
            for k, label in enumerate(names):
                vals = [r[2 + k] / 1000 for r in rows]
                print(f"| {n} | {route} | {label} | {pct(vals, 0.5):.2f} | {pct(vals, 0.99):.2f} |")
        cont, full = results[("continuing", routes[0])], results[("full", routes[0])]
        hits = sum(1 for r in cont if r[1] > 0)
        sc, sf = sum(r[4] for r in cont), sum(r[4] for r in full)
        for stage in sorted(set(per_stage["continuing"]) | set(per_stage["full"])):
            print(f"stage {stage}: continuing {per_stage['continuing'].get(stage, 0):.1f} ms, full {per_stage['full'].get(stage, 0):.1f} ms")
        print(f"continuing path: {hits}/{len(cont)} calls continued a stored prefix; stage time {sc / 1000:.1f} ms in all, "
              f"full runs {sf / 1000:.1f} ms: {100 * sc / max(sf, 1):.1f}%")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
