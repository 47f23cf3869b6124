// Writes the golden cases tokens_<meter>: micro_over_budget's conversation and pipeline with the
// budget in tokens, one case per meter. The token figures come from the reference tokenizers
// (gpt-tokenizer, @anthropic-ai/tokenizer) under node, counting each message by the rule
// framework/include/compactor/meter.hpp documents; nothing here runs Compactor.
//   node tests/golden/tools/run_tokens.js tools/tokenizer-data/node_modules
'use strict'
const fs = require('fs')
const path = require('path')
const modules = path.resolve(process.argv[2])
const { counters, countMessage } = require('../../meter/reference_counts')(modules)
const fit = { per_token: 1.1, per_message: 5 }
const meters = {
  chars4: (m) => Math.ceil([...JSON.stringify(m)].length / 4),
  cl100k: (m) => countMessage(counters.cl100k, m),
  o200k: (m) => countMessage(counters.o200k, m),
  'claude-legacy': (m) => countMessage(counters['claude-legacy'], m),
  calibrated: (m) => Math.round(fit.per_token * countMessage(counters['claude-legacy'], m) + fit.per_message),
}

const golden = path.resolve(__dirname, '..', 'run')
const crypto = require('crypto')
const base = path.join(golden, 'micro_over_budget')
const baseReport = JSON.parse(fs.readFileSync(path.join(base, 'expected_report.json'), 'utf8'))

// micro_over_budget's shape (five read calls, then a reply and a request), with results of
// varied log text: 600 repeated letters are fewer tokens than the marker that would replace them.
function logText(k) {
  let t = ''
  for (let line = 0; t.length < 600; line++)
    t += `2026-11-30T10:${String(k * 7 + line).padStart(2, '0')}:00Z step ${k}.${line}: cc -c src/module_${k}_${line}.c -o build/m${line}.o; warning: unused variable 'v${line * 13 + k}' [-Wunused]\n`
  return t.slice(0, 600)
}
const input = [{ role: 'user', content: 'summarize the build logs' }]
for (let k = 0; k < 5; k++) {
  const id = `toolu_0${k}`
  input.push({ role: 'assistant', content: [{ type: 'text', text: `Reading log ${k}.` }, { type: 'tool_use', id, name: 'Read', input: { path: `logs/${k}.txt` } }] })
  input.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: logText(k) }] })
}
input.push({ role: 'assistant', content: [{ type: 'text', text: 'All five logs show the same linker error.' }] })
input.push({ role: 'user', content: 'thanks, now fix it' })
// micro with keep_recent 2: the three older results become receipt markers; the oldest one says
// how to restore (nothing before it does).
const output = JSON.parse(JSON.stringify(input))
for (const i of [2, 4, 6]) {
  const block = output[i].content[0]
  // The receipt names the content's JSON.
  const receipt = 'sha256:' + crypto.createHash('sha256').update(JSON.stringify(block.content), 'utf8').digest('hex')
  // The marker names the result's tool and path.
  block.content = `[compactor archived result of Read logs/${(i - 2) / 2}.txt, ${[...block.content].length} chars: ${receipt}]`
  if (i === 2)
    block.content += ` An archived result is not an execution result; \`compactor restore ${receipt}\` gives it back, and so for every such marker.`
}
const text = (ms) => '[\n' + ms.map((m) => JSON.stringify(m)).join(',\n') + '\n]\n'
const chars = (ms) => ms.reduce((s, m) => s + [...JSON.stringify(m)].length, 0)
const bytes = (ms) => ms.reduce((s, m) => s + Buffer.byteLength(JSON.stringify(m)), 0)

for (const [kind, count] of Object.entries(meters)) {
  const before = input.reduce((s, m) => s + count(m), 0)
  const after = output.reduce((s, m) => s + count(m), 0)
  const limit = Math.floor((before + after) / 2)  // over before micro, within after
  if (after >= before) throw new Error(`${kind}: micro would not shrink this conversation (${before} → ${after})`)
  const dir = path.join(golden, 'tokens_' + kind.replace('-', '_'))
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, 'input.json'), text(input))
  fs.writeFileSync(path.join(dir, 'expected_output.json'), text(output))
  fs.writeFileSync(path.join(dir, 'expected_exit'), '0\n')
  const meterYaml = kind === 'calibrated' ? `meter: {kind: calibrated, file: fit.yaml}\n` : `meter: {kind: ${kind}}\n`
  fs.writeFileSync(path.join(dir, 'pipeline.yaml'),
    `version: 1\nbudget: {unit: tokens, limit: ${limit}}\n${meterYaml}pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 2}\n`)
  if (kind === 'calibrated')
    fs.writeFileSync(path.join(dir, 'fit.yaml'),
      `version: 1\nbase: claude-legacy\ndefault_family: opus\nfamilies:\n  opus: {per_token: ${fit.per_token}, per_message: ${fit.per_message}}\n`)
  fs.writeFileSync(path.join(dir, 'intent.txt'),
    `Budget in tokens by the ${kind} meter (${before} → ${after}, limit ${limit}): micro runs over budget and the run ends within it.\n`)
  const r = JSON.parse(JSON.stringify(baseReport))
  r.budget = { unit: 'tokens', limit, target: limit }
  const withTokens = (s, t) => ({ messages: 13, chars: chars(t === before ? input : output), bytes: bytes(t === before ? input : output), tokens: t })
  r.input_size = withTokens(r.input_size, before)
  r.output_size = withTokens(r.output_size, after)
  r.stages[0].before = withTokens(r.stages[0].before, before)
  r.stages[0].after = withTokens(r.stages[0].after, after)
  const meterLines = kind === 'calibrated' ? `meter:\n  kind: "calibrated"\n  file: "$CASE/fit.yaml"\n` : `meter:\n  kind: "${kind}"\n`
  r.resolved_pipeline = r.resolved_pipeline
    .replace('budget:\n  unit: chars\n  limit: 3600\n  target: 3600\n', `budget:\n  unit: tokens\n  limit: ${limit}\n  target: ${limit}\n${meterLines}`)
  fs.writeFileSync(path.join(dir, 'expected_report.json'), JSON.stringify(r, null, 2) + '\n')
  console.log(`tokens_${kind}: ${before} → ${after}, limit ${limit}`)
}
