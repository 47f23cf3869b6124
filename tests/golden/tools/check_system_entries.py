#!/usr/bin/env python3
"""Writes the golden `compactor check` cases for system entries inside `messages`.

The rules restated from the Messages API's "Mid-conversation system messages" page (recorded in
docs/design/serve.md): a {"role": "system"} entry is never the first entry; it follows
a user message (or an assistant message that ends in a server tool use); it is the last entry or
is followed by an assistant message; it never touches another system entry; its content is a
string or text blocks only. Sizes are the JSON text's code points and bytes (`system`, `tools`,
each message and each system entry as written). Shares no code with Compactor, never runs it.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "..", "check")


def dump(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def write_case(name, intent, text, exit_code, output):
    d = os.path.join(CHECK, name)
    os.makedirs(d, exist_ok=True)
    for f, content in (("input.json", text), ("intent.txt", intent + "\n"), ("expected_exit", f"{exit_code}\n"),
                       ("expected_output", output)):
        with open(os.path.join(d, f), "w", encoding="utf-8") as out:
            out.write(content)


def array_text(elements):
    # One element a line: element 0 at 1:2, element i > 0 at (i+1):1.
    return "[" + ",\n".join(dump(e) for e in elements) + "]"


def where(i):
    return f"input.json:{i + 1}:{2 if i == 0 else 1}"


def sizes(parts):
    text = "".join(parts)
    return len(text), len(text.encode("utf-8"))


USER = {"role": "user", "content": "list the files"}
ASSISTANT = {"role": "assistant", "content": "Two files."}
SYS = {"role": "system", "content": "The user is in plan mode."}

# 1. A Claude-Code-shaped request body: entries after a user message and after tool results,
#    one last; one carries cache_control on its text block, as the top-level system may.
messages = [
    {"role": "user", "content": "list the files"},
    {"role": "system", "content": "The user is in plan mode."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "ls"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "a.txt\nb.txt"}]},
    {"role": "system", "content": [{"type": "text", "text": "Reminder: keep answers short.", "cache_control": {"type": "ephemeral"}}]},
    {"role": "assistant", "content": "Two files: a.txt and b.txt."},
    {"role": "user", "content": "thanks"},
    {"role": "system", "content": "Token budget: 1000 left."},
]
system = "You are terse."
body = ('{"model":"claude-opus-4-8","max_tokens":1024,"system":' + dump(system) +
        ',"context_management":{"edits":[]},"messages":[' + ",".join(dump(m) for m in messages) + "]}")
chars, nbytes = sizes([dump(system)] + [dump(m) for m in messages])
write_case("system_entries_request_body",
           "A request body with system entries where the API accepts them passes; they count in its size.",
           body, 0,
           f"OK input.json: 5 messages (3 user, 2 assistant) and 3 system entries, 1 tool pair, {chars} chars, {nbytes} bytes (request body)\n")

# 2. The old case: a system entry after the last user message is the last entry, accepted.
elements = [{"role": "user", "content": "run the tests"}, {"role": "system", "content": "be terse"}]
chars, nbytes = sizes([dump(e) for e in elements])
write_case("system_role", "A system entry after the last user message (the last entry) is accepted.",
           array_text(elements), 0,
           f"OK input.json: 1 message (1 user, 0 assistant) and 1 system entry, 0 tool pairs, {chars} chars, {nbytes} bytes (messages array)\n")

# 3-7. Each misplacement or content refused with its rule and its position.
refusals = [
    ("system_entry_first", "A system entry as the first message is refused (never first).",
     [SYS, USER, ASSISTANT], 0, "a system entry is never the first message (rule: never first)"),
    ("system_entry_after_assistant", "A system entry after an assistant turn is refused (after a user turn).",
     [USER, ASSISTANT, SYS], 2,
     "a system entry must follow a user message (or an assistant message that ends in a server tool use), "
     "got an assistant message (rule: after a user turn)"),
    ("system_entries_adjacent", "Two system entries next to each other are refused (never adjacent).",
     [USER, SYS, {"role": "system", "content": "second"}, ASSISTANT], 2,
     "a system entry never follows another system entry (rule: never adjacent)"),
    ("system_entry_before_user", "A system entry followed by a user message is refused (before an assistant turn).",
     [USER, SYS, {"role": "user", "content": "and the hidden ones"}, ASSISTANT], 1,
     "a system entry must be the last message or be followed by an assistant message, got a user message "
     "(rule: before an assistant turn)"),
    ("system_entry_image", "A system entry holding an image is refused (text only).",
     [USER, {"role": "system", "content": [{"type": "text", "text": "see"},
                                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}],
     1, "a system entry's content is a string or text blocks only, but content.1 has type \"image\" (rule: text only)"),
]
for name, intent, elements, at, what in refusals:
    lines = f"{where(at)}: messages.{at}: {what}\n"
    if name == "system_entry_first":  # followed by a user message too: both rules, one line each
        lines += (f"{where(at)}: messages.{at}: a system entry must be the last message or be followed by an "
                  "assistant message, got a user message (rule: before an assistant turn)\n")
    write_case(name, intent, array_text(elements), 2, lines)
