#!/usr/bin/env python3
"""Independent check of `compactor import --corpus` (it shares no code with the importer).

usage: check_import_counts.py CORPUS_DIR REPORT_JSON

For every Claude Code session (*.jsonl) it recounts, straight from the file, the lines that are
not valid JSON (their numbers must equal the report's broken_lines) and the distinct tool_use ids
in the chain's message lines (main chain, or the sub-agent chain of agent-*.jsonl files; meta
lines excluded), which must equal the report's tool_uses_in_log; in a Codex session (a *.jsonl
whose first record is a session_meta) the distinct call_ids of its call items instead, and in a
Gemini CLI chat (a *.jsonl whose first line names a projectHash) the distinct ids of the model
records' toolCalls. For every OpenAI trajectory (*.traj) it counts the tool calls, which must
equal the report's tool_uses. Exits 1 on any mismatch, printing each; prints the totals it found.
"""
import json
import os
import sys


def claude_code_counts(path):
    sidechain = os.path.basename(path).startswith("agent-")
    broken, ids = [], set()
    with open(path, "rb") as f:
        for number, raw in enumerate(f.read().split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                broken.append(number)
                continue
            if not isinstance(line, dict) or line.get("type") not in ("user", "assistant"):
                continue
            if bool(line.get("isSidechain")) != sidechain or line.get("isMeta"):
                continue
            content = (line.get("message") or {}).get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        ids.add(block.get("id"))
    return broken, len(ids)


def codex_counts(path):
    """Broken lines and distinct call_ids of the call items (type *_call) a Codex rollout records."""
    broken, ids = [], set()
    with open(path, "rb") as f:
        for number, raw in enumerate(f.read().split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                broken.append(number)
                continue
            item = line.get("payload") if isinstance(line, dict) and line.get("type") == "response_item" else None
            if isinstance(item, dict) and str(item.get("type", "")).endswith("_call") and "call_id" in item:
                ids.add(item["call_id"])
    return broken, len(ids)


def is_codex(path):
    with open(path, "rb") as f:
        first = f.readline()
    return b'"session_meta"' in first


def gemini_chat_counts(path):
    """None when the file is not a Gemini CLI chat; else (broken line numbers, distinct call ids)."""
    broken, ids, first = [], set(), True
    with open(path, "rb") as f:
        for number, raw in enumerate(f.read().split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                broken.append(number)
                continue
            if first and not (isinstance(line, dict) and "projectHash" in line):
                return None
            first = False
            if isinstance(line, dict) and line.get("type") == "gemini":
                for call in line.get("toolCalls") or []:
                    ids.add(call.get("id"))
    return broken, len(ids)


def openai_tool_calls(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    history = data["history"] if isinstance(data, dict) and "history" in data else data
    return sum(len(m.get("tool_calls") or []) for m in history if m.get("role") == "assistant")


def main(corpus, report_path):
    with open(report_path, encoding="utf-8") as f:
        report = {entry["source"]: entry for entry in json.load(f)}
    problems, broken_total, files = [], 0, 0
    for folder, _, names in os.walk(corpus):
        for name in sorted(names):
            path = os.path.join(folder, name)
            if not name.endswith((".jsonl", ".traj")):
                continue
            files += 1
            entry = report.get(path)
            if entry is None:
                problems.append(f"{path}: not in the report")
                continue
            if name.endswith(".jsonl"):
                broken, tool_uses = codex_counts(path) if is_codex(path) else (gemini_chat_counts(path) or claude_code_counts(path))
                broken_total += len(broken)
                if broken != entry["broken_lines"]:
                    problems.append(f"{path}: broken lines {broken} here, {entry['broken_lines']} in the report")
                if tool_uses != entry["tool_uses_in_log"]:
                    problems.append(f"{path}: {tool_uses} tool_use ids here, {entry['tool_uses_in_log']} in the report")
            else:
                calls = openai_tool_calls(path)
                if calls != entry["tool_uses"]:
                    problems.append(f"{path}: {calls} tool calls here, {entry['tool_uses']} in the report")
    for p in problems:
        print("MISMATCH " + p)
    print(f"independent counts: {files} files, {broken_total} broken lines, {len(problems)} mismatches")
    return 1 if problems or files == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
