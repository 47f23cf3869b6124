#!/usr/bin/env python3
"""A stand-in for an agent CLI (claude, qwen, gemini, codex; the name it is called by), for the
documentation's commands (run_doc_commands.py). It reads what the real agent reads to find its
model API (an environment variable, Codex's config.toml), refuses to run when that is missing, and
sends one conversation there, which must be answered by `compactor serve` (its
x-compactor-status header): a command the docs show that would send the agent anywhere else
fails. `claude mcp add [--scope S] NAME -- COMMAND…` starts COMMAND as an MCP server over stdio
and lists its tools, which must include restore and search. Exits 0 or 1 with one line.
"""
import json
import os
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

WAIT_S = float(os.environ.get("COMPACTOR_DOC_AGENT_WAIT_S", "10"))  # for a server the block started in the background


def fail(agent, why):
    print(f"{agent} (stand-in): {why}")
    sys.exit(1)


def need(agent, name, what):
    value = os.environ.get(name, "")
    if not value:
        fail(agent, f"{name} is not set: {what}")
    return value


def post(agent, url, body, headers):
    """The answer of the server at `url`, waiting for it to listen; (status, headers, body)."""
    data = json.dumps(body).encode()
    deadline = time.monotonic() + WAIT_S
    while True:
        request = urllib.request.Request(url, data=data, method="POST", headers={"content-type": "application/json", **headers})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()
        except (urllib.error.URLError, ConnectionError) as e:
            if time.monotonic() > deadline:
                fail(agent, f"nothing answers at {url} after {WAIT_S} s ({e})")
            time.sleep(0.1)


def expect_compactor(agent, url, status, headers, body):
    compacted = headers.get("x-compactor-status")
    if compacted is None:
        fail(agent, f"{url} answered {status} without x-compactor-status: not compactor serve")
    warning = headers.get("x-compactor-warning", "")
    print(f"{agent} (stand-in): POST {url} -> {status}, x-compactor-status: {compacted}" + (f" ({warning})" if warning else ""))


def conversation():
    """One exchange with a tool call, in the Messages API's shape."""
    return [{"role": "user", "content": "Show me the hosts file."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "/etc/hosts"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "127.0.0.1 localhost"}]}]


def claude(args):
    if args[:2] == ["mcp", "add"]:
        return mcp_add(args[2:])
    base = need("claude", "ANTHROPIC_BASE_URL", "this claude would call api.anthropic.com itself")
    key = need("claude", "ANTHROPIC_API_KEY", "claude needs a key")
    url = base.rstrip("/") + "/v1/messages"
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": conversation()}
    expect_compactor("claude", url, *post("claude", url, body, {"x-api-key": key, "anthropic-version": "2023-06-01"}))


def qwen(args):
    base = need("qwen", "OPENAI_BASE_URL", "this qwen would call its provider itself")
    key = need("qwen", "OPENAI_API_KEY", "qwen needs a key")
    model = need("qwen", "OPENAI_MODEL", "qwen needs a model")
    url = base.rstrip("/") + "/chat/completions"
    messages = [{"role": "user", "content": "Show me the hosts file."},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"/etc/hosts\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "127.0.0.1 localhost"}]
    expect_compactor("qwen", url, *post("qwen", url, {"model": model, "messages": messages}, {"authorization": f"Bearer {key}"}))


def gemini(args):
    base = need("gemini", "GOOGLE_GEMINI_BASE_URL", "this gemini would call generativelanguage.googleapis.com itself")
    key = need("gemini", "GEMINI_API_KEY", "gemini needs a key")
    url = base.rstrip("/") + "/v1beta/models/gemini-2.5-flash:generateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "Show me the hosts file."}]},
                         {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"path": "/etc/hosts"}}}]},
                         {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"output": "127.0.0.1 localhost"}}}]}],
            "tools": [{"functionDeclarations": [{"name": "read", "description": "reads a file"}]}]}
    expect_compactor("gemini", url, *post("gemini", url, body, {"x-goog-api-key": key}))


def codex(args):
    home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    path = home / "config.toml"
    if not path.is_file():
        fail("codex", f"no {path}: this codex would call api.openai.com itself")
    config = tomllib.loads(path.read_text())
    name = config.get("model_provider")
    if name is None:
        fail("codex", f"{path} names no model_provider: this codex would use its built-in openai provider")
    provider = config.get("model_providers", {}).get(name)
    if provider is None:
        fail("codex", f"{path}: model_provider \"{name}\" has no [model_providers.{name}]")
    if provider.get("wire_api") != "responses":
        fail("codex", f"{path}: [model_providers.{name}] wire_api is {provider.get('wire_api')!r}, not \"responses\"")
    key = need("codex", provider.get("env_key", "OPENAI_API_KEY"), "the provider's env_key names it")
    url = provider["base_url"].rstrip("/") + "/responses"
    body = {"model": "gpt-5-codex", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Show me the hosts file."}]},
        {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": "{\"command\":[\"cat\",\"/etc/hosts\"]}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "127.0.0.1 localhost"}]}
    expect_compactor("codex", url, *post("codex", url, body, {"authorization": f"Bearer {key}"}))


def mcp_add(args):
    if "--" not in args:
        fail("claude", "claude mcp add: expected NAME -- COMMAND")
    command = args[args.index("--") + 1:]
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "stand-in", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    text = "".join(json.dumps(r) + "\n" for r in requests)
    try:
        done = subprocess.run(command, input=text, capture_output=True, text=True, timeout=WAIT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        fail("claude", f"the MCP server {' '.join(command)} did not run: {e}")
    tools = []
    for line in done.stdout.splitlines():
        answer = json.loads(line)
        if answer.get("id") == 2:
            tools = [t["name"] for t in answer.get("result", {}).get("tools", [])]
    if not {"restore", "search"} <= set(tools):
        fail("claude", f"the MCP server {' '.join(command)} lists {tools or 'no tools'} (exit {done.returncode}): {done.stderr.strip()}")
    print(f"claude (stand-in): MCP server {' '.join(command)}: tools {', '.join(tools)}")


if __name__ == "__main__":
    agent = Path(sys.argv[0]).name
    handlers = {"claude": claude, "qwen": qwen, "gemini": gemini, "codex": codex}
    if agent not in handlers:
        fail(agent, "not an agent this stand-in plays")
    handlers[agent](sys.argv[1:])
