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

--route gemini sends the same session as Gemini generateContent bodies (each call a
functionCall part with a thoughtSignature, each result a functionResponse part) to
/v1beta/models/M:generateContent, so the Gemini adapter's read and write-back show beside the
other routes'.

usage: serve_overhead.py COMPACTOR CONFIG SESSION [--calls N] [--route messages|chat|responses|gemini]
  SESSION: any input `compactor import` reads (messages array, Claude Code log, OpenAI history).
  --route chat: the same history as OpenAI Chat Completions requests to /v1/chat/completions.
  --route responses: the same history as OpenAI Responses requests to /v1/responses (each tool
  call a function_call after a reasoning item with an opaque encrypted_content, as Codex sends
  them), so the Responses adapter's overhead reads beside the Messages route's on one session.
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

LINE = re.compile(r"messages=(\d+) continued=(\d+) .*parse_us=(\d+) state_us=(\d+) stages_us=(\d+) write_us=(\d+) worker_us=(\d+) first_byte_us=(-?\d+) forward_us=(\d+)")


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


def text_of(content):
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


def responses_items(messages):
    """Anthropic messages as Responses input items, the way Codex sends a history."""
    items = []
    for k, m in enumerate(messages):
        content = m["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if m["role"] == "user":
            for b in blocks:
                if b.get("type") == "tool_result":
                    items.append({"type": "function_call_output", "id": f"fco_{len(items)}", "call_id": b["tool_use_id"],
                                  "output": text_of(b.get("content", ""))})
            text = text_of([b for b in blocks if b.get("type") == "text"])
            if text:
                items.append({"type": "message", "id": f"msg_{len(items)}", "role": "user",
                              "content": [{"type": "input_text", "text": text}]})
            continue
        items.append({"type": "reasoning", "id": f"rs_{k}", "summary": [], "encrypted_content": "gAAAAB" + "Q" * 400})
        text = text_of([b for b in blocks if b.get("type") == "text"])
        if text:
            items.append({"type": "message", "id": f"msg_{len(items)}", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": text, "annotations": []}]})
        for b in blocks:
            if b.get("type") == "tool_use":
                items.append({"type": "function_call", "id": f"fc_{len(items)}", "call_id": b["id"], "name": b["name"],
                              "arguments": json.dumps(b.get("input", {}), separators=(",", ":"))})
    return items


def gemini_body(messages):
    """Anthropic messages as a Gemini body: text as text parts, a tool_use as a functionCall (the
    first of a turn signed), a tool_result as a functionResponse naming its call's function."""
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
    return {"contents": contents, "systemInstruction": {"parts": [{"text": "You are a coding agent."}]},
            "tools": [{"functionDeclarations": [{"name": n} for n in sorted(set(names.values())) or ["tool"]]}]}


def post(port, body, path="/v1/messages"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST",
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
    ap.add_argument("--route", choices=["messages", "chat", "responses", "gemini"], default="messages",
                    help="messages: Anthropic bodies to /v1/messages; chat: the same session as OpenAI Chat Completions "
                         "bodies (import --output-format openai) to /v1/chat/completions; responses: as Codex-shaped "
                         "Responses bodies to /v1/responses; gemini: as Gemini generateContent bodies to "
                         "/v1beta/models/gemini-2.5-pro:generateContent")
    a = ap.parse_args()
    cli = os.path.abspath(a.cli)
    form = ["--output-format", "openai"] if a.route == "chat" else []
    messages = json.loads(subprocess.run([cli, "import", "--input", a.session, "--output", "-", *form], check=True,
                                         capture_output=True, text=True).stdout)
    if isinstance(messages, dict):
        messages = messages["messages"]
    path = {"messages": "/v1/messages", "chat": "/v1/chat/completions", "responses": "/v1/responses",
            "gemini": "/v1beta/models/gemini-2.5-pro:generateContent"}[a.route]
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
            if a.route == "messages":
                request = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages[:i]}
            elif a.route == "chat":
                request = {"model": "gpt-4o", "messages": messages[:i]}
            elif a.route == "gemini":
                request = gemini_body(messages[:i])
            else:
                request = {"model": "gpt-5.1-codex", "stream": False, "store": False, "include": ["reasoning.encrypted_content"],
                           "input": [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are a coding agent."}]}]
                           + responses_items(messages[:i])}
            body = json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode()
            post(servers["continuing"][1], body, path)
            shutil.rmtree(os.path.join(work, "full", "archive", "serve-state"), ignore_errors=True)
            post(servers["full"][1], body, path)
        results, per_stage = {}, {}
        for n, (p, port, err) in servers.items():
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60).read().decode()
            per_stage[n] = {m.group(1): float(m.group(2)) * 1000 for m in
                            re.finditer(r'compactor_serve_stage_seconds_sum\{stage="([^"]+)"\} ([0-9.e+-]+)', metrics)}
            p.terminate()
            p.wait()
            rows = [tuple(map(int, m.groups())) for m in map(LINE.search, open(err)) if m]
            results[n] = rows
        print(f"session {a.session}: {len(messages)} messages, {len(calls)} calls, config {a.config}, route {path}")
        print("| path | component | p50 ms | p99 ms |")
        print("|---|---|---:|---:|")
        names = ["parse (the wire format's read)", "state lookup", "stages", "write-back (and state write)",
                 "worker (queue, fork, stages, syncs, state write, as the server sees it)", "upstream's first byte", "forwarding"]
        for n, rows in results.items():
            for k, label in enumerate(names):
                vals = [r[2 + k] / 1000 for r in rows]
                print(f"| {n} | {label} | {pct(vals, 0.5):.2f} | {pct(vals, 0.99):.2f} |")
        cont, full = results["continuing"], results["full"]
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
