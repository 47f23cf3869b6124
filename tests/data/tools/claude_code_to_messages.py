#!/usr/bin/env python3
"""One-off helper that made the messages-array fixtures in tests/data from Claude Code session
logs (CC0, see LICENSE-claude-code-sessions). It is independent of Compactor's own code on
purpose: the tests compare Compactor against what this script produced. The real importer
(`compactor import`) is a separate, tested piece of the product.

Rules: main-chain user/assistant lines in file order; broken JSON lines skipped; meta lines left
out; assistant lines sharing message.id merged; consecutive messages of one role merged with
tool_result blocks first; orphan results dropped; a tool_use without a result answered by an
is_error result saying it was lost. Only role and content are kept per message.

usage: claude_code_to_messages.py SESSION.jsonl > OUT.json
"""
import json
import sys


def main(path):
    messages = []  # (role, id, blocks)
    for line in open(path, encoding="utf-8", errors="strict"):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("type") not in ("user", "assistant") or d.get("isSidechain") or d.get("isMeta"):
            continue
        m = d.get("message") or {}
        role, content = m.get("role"), m.get("content")
        if role not in ("user", "assistant") or content is None:
            continue
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        blocks = [b for b in blocks if not (b.get("type") == "text" and not b.get("text", "").strip())]
        if not blocks:
            continue
        mid = m.get("id") if role == "assistant" else None
        if messages and messages[-1][0] == role:
            messages[-1][2].extend(blocks)
        else:
            messages.append([role, mid, blocks])

    out = []
    for i, (role, _, blocks) in enumerate(messages):
        if role == "user":
            results = [b for b in blocks if b.get("type") == "tool_result"]
            others = [b for b in blocks if b.get("type") != "tool_result"]
            prev_ids = []
            if out and out[-1]["role"] == "assistant":
                prev_ids = [b["id"] for b in out[-1]["content"] if b.get("type") == "tool_use"]
            seen = set()
            kept = []
            for r in results:
                if r.get("tool_use_id") in prev_ids and r.get("tool_use_id") not in seen:
                    seen.add(r["tool_use_id"])
                    kept.append(r)
            for tid in prev_ids:
                if tid not in seen:
                    kept.append({"type": "tool_result", "tool_use_id": tid, "is_error": True,
                                 "content": "[result lost: not in the session log]"})
            blocks = kept + others
            if not blocks:
                continue
        out.append({"role": role, "content": blocks})
        if role == "assistant" and i == len(messages) - 1:
            ids = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            if ids:
                out.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": t, "is_error": True,
                     "content": "[result lost: not in the session log]"} for t in ids]})
    # The last message must be the user's turn for a request to be sent.
    while out and out[-1]["role"] == "assistant":
        out.pop()
    sys.stdout.write("[\n" + ",\n".join(json.dumps(m, ensure_ascii=False, separators=(",", ":")) for m in out) + "\n]\n")


if __name__ == "__main__":
    main(sys.argv[1])
