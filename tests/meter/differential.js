// Differential test of Compactor's meters against the reference tokenizers under node:
// gpt-tokenizer (cl100k_base, o200k_base) and @anthropic-ai/tokenizer (Claude's legacy one, run by
// OpenAI's tiktoken as wasm), on every message of the conversations given. Counts each message
// with the rule Compactor documents (meter.hpp) and compares with `compactor count --per-message`.
//   node differential.js COMPACTOR_CLI NODE_MODULES FILE...
// Exits 1 on the first mismatch, naming the file, the message and the meter.
'use strict'
const { execFileSync } = require('child_process')
const fs = require('fs')
const path = require('path')

const [cli, modules, ...files] = process.argv.slice(2)
const { counters, countMessage } = require('./reference_counts')(modules)
const { get_encoding } = require(path.resolve(modules, 'tiktoken'))
const tiktoken = { cl100k: get_encoding('cl100k_base'), o200k: get_encoding('o200k_base') }

let messages = 0, tokens = 0, tiktokenDisagreements = 0
for (const file of files) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'))
  const conversation = Array.isArray(doc) ? doc : doc.messages
  const ours = execFileSync(cli, ['count', '--input', file, '--per-message', '--meter', 'cl100k', '--meter', 'o200k', '--meter', 'claude-legacy'],
    { encoding: 'utf8', maxBuffer: 1 << 28 }).trim().split('\n').map((l) => JSON.parse(l)).filter((l) => 'message' in l)
  if (ours.length !== conversation.length) {
    console.error(`${file}: compactor counted ${ours.length} messages, node read ${conversation.length}`)
    process.exit(1)
  }
  conversation.forEach((m, i) => {
    for (const [meter, count] of Object.entries(counters)) {
      const expected = countMessage(count, m)
      if (ours[i][meter] !== expected) {
        console.error(`${file}: messages.${i}: ${meter}: compactor ${ours[i][meter]}, reference ${expected}`)
        process.exit(1)
      }
      tokens += expected
    }
    // gpt-tokenizer against OpenAI's own tiktoken: informational, they should agree too.
    for (const meter of ['cl100k', 'o200k'])
      if (countMessage((t) => tiktoken[meter].encode(t, [], []).length, m) !== ours[i][meter]) tiktokenDisagreements++
    messages++
  })
}
console.log(`${messages} messages of ${files.length} files, ${tokens} tokens: every count matches the references` +
  ` (tiktoken disagreed on ${tiktokenDisagreements})`)
if (tiktokenDisagreements) process.exit(1)
