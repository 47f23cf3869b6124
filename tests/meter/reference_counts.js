// The reference side of the meters' tests: each message counted by the rule
// framework/include/compactor/meter.hpp documents, with the reference tokenizers under node
// (gpt-tokenizer for cl100k_base and o200k_base; @anthropic-ai/tokenizer, run by OpenAI's tiktoken
// as wasm, for Claude's legacy one). Used by differential.js and tests/golden/tools/run_tokens.js.
//   const { counters, countMessage } = require('./reference_counts')(NODE_MODULES)
'use strict'
const path = require('path')

const MEDIA = 1600  // an image or document block

function countJson(count, v) {
  return typeof v === 'string' ? count(v) : count(JSON.stringify(v))
}

function countMessage(count, m) {
  if (typeof m.content === 'string') return count(m.content)
  let n = 0
  for (const b of m.content) {
    switch (b.type) {
      case 'text': n += count(b.text); break
      case 'thinking': n += count(b.thinking ?? ''); break
      case 'redacted_thinking': n += count(b.data ?? ''); break
      case 'image': case 'document': n += MEDIA; break
      case 'tool_use': case 'server_tool_use': case 'mcp_tool_use':
        n += count(b.name ?? '')
        if (b.input !== undefined) n += countJson(count, b.input)
        break
      case 'tool_result':
        if (Array.isArray(b.content)) {
          for (const c of b.content) {
            if (c.type === 'image' || c.type === 'document') n += MEDIA
            else if (c.type === 'text' && typeof c.text === 'string') n += count(c.text)
            else n += count(JSON.stringify(c))
          }
        } else if (b.content !== undefined) n += countJson(count, b.content)
        break
      default:
        if (b.type.endsWith('_tool_result')) {
          if (b.content !== undefined) n += countJson(count, b.content)
        } else n += count(JSON.stringify(b))
    }
  }
  return n
}

module.exports = (modules) => {
  const req = (m) => require(path.resolve(modules, m))
  const cl100k = req('gpt-tokenizer/cjs/encoding/cl100k_base')
  const o200k = req('gpt-tokenizer/cjs/encoding/o200k_base')
  const claude = req('@anthropic-ai/tokenizer').getTokenizer()  // countTokens() builds one per call
  const plain = { disallowedSpecial: new Set(), allowedSpecial: new Set() }
  return {
    counters: {
      cl100k: (t) => cl100k.encode(t, plain).length,
      o200k: (t) => o200k.encode(t, plain).length,
      'claude-legacy': (t) => claude.encode(t.normalize('NFKC'), 'all').length,  // what countTokens() does
    },
    countMessage,
  }
}
