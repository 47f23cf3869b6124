#!/usr/bin/env python3
# Writes golden/input.json and golden/expected.json: what the example's stage must make of a
# session that read the same file twice. Computed here, independently of the stage: compact JSON,
# the receipt is the SHA-256 of the replaced content field's JSON bytes, and the one marker (the
# oldest) says how to restore it, the default way (`compactor restore`).
import hashlib, json, os
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'golden')
config = ''.join(f'option_{i} = "value {i}"\n' for i in range(12))  # > 200 chars
def dump(v): return json.dumps(v, separators=(',', ':'), ensure_ascii=False)
def use(i, name, inp): return {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": name, "input": inp}]}
def res(i, content): return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": content}]}
messages = [
  {"role": "user", "content": "Rebuild, then tell me whether app.cfg changed."},
  use("toolu_01", "Read", {"file_path": "app.cfg"}), res("toolu_01", config),
  use("toolu_02", "Bash", {"command": "make"}), res("toolu_02", "built 3 targets"),
  use("toolu_03", "Read", {"file_path": "app.cfg"}), res("toolu_03", config),
  {"role": "assistant", "content": [{"type": "text", "text": "app.cfg is unchanged by the build."}]},
]
receipt = 'sha256:' + hashlib.sha256(dump(config).encode()).hexdigest()
expected = [dict(m) for m in messages]
expected[2] = res("toolu_01", f"[compactor dedupe: same as the result of toolu_03; archived as {receipt}] "
                             f"`compactor restore {receipt}` gives it back, and so for every receipt in a marker.")
open(os.path.join(here, 'input.json'), 'w').write('[' + ','.join(map(dump, messages)) + ']')
open(os.path.join(here, 'expected.json'), 'w').write('[' + ','.join(map(dump, expected)) + ']')
open(os.path.join(here, 'archived.txt'), 'w').write(receipt + '\n' + dump(config))
