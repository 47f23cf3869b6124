// Qwen Code itself (npm @qwen-code/qwen-code, pinned by package-lock.json here; 0.15 runs on Node
// 20) runs a 30-turn file-reading task through `compactor serve`'s Chat Completions route,
// against a scripted upstream this script starts on 127.0.0.1 that streams like a DeepSeek-style
// model: every answer carries `reasoning_content`, which Qwen Code sends back on every later call.
// The budget forces compaction. Then the upstream, as a model would, picks a receipt from a
// marker in the history it was sent and restores that result through the `restore` tool of the
// `compactor mcp` server Qwen Code loads from its settings (mcpServers).
//
// Asserted, from what the upstream received and from the documentation's rules (not from the
// adapter): Qwen Code finishes; every call whose history was over the limit went out within it
// (as `compactor count` measures the forwarded body, system and tools included); every forwarded
// body meets the Chat Completions rules (the tool messages answering an assistant message's
// tool_calls follow it at once, one per id, none without its call) and passes `compactor check`;
// every reasoning_content the upstream issued that is still in the history comes back
// byte-identical; the restored result is the file's text as Qwen Code first sent it.
//
// usage: node qwen_code.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { listen, startServe, run, checkAll, writeFiles } = require('../lib/harness.js');
const { chatRuleViolations } = require('../lib/chat_upstream.js');

const [cli, pluginDir, workDir] = process.argv.slice(2);
const qwen = path.join(__dirname, 'node_modules', '.bin', 'qwen');
const READS = 30;
const LIMIT = 150000;  // chars, system and tools included
const deadline = setTimeout(() => { console.error('qwen_code: timed out'); process.exit(1); }, 560000);

// ---- the scripted upstream ------------------------------------------------------------------
const received = [];   // every request body, parsed
const issued = {};     // call id -> the reasoning_content the upstream gave with that call
let reads = 0, restoreAsked = null, restoreAnswered = null;
const RECEIPT = /\[compactor archived result[^\]]*?, \d+ chars: (sha256:[0-9a-f]{64})\]/;

function toolText(m) {
  if (typeof m.content === 'string') return m.content;
  return (m.content || []).filter((p) => p.type === 'text').map((p) => p.text).join('');
}

function nextStep(json) {
  const messages = json.messages || [];
  if (restoreAsked && !restoreAnswered) {
    const answer = messages.find((m) => m.role === 'tool' && m.tool_call_id === restoreAsked.id);
    if (answer) restoreAnswered = toolText(answer);
  }
  if (reads < READS) {
    reads += 1;
    const id = `call_read_${reads}`;
    return { id, name: 'read_file', args: { file_path: path.join(workDir, 'files', `f${String(reads).padStart(2, '0')}.txt`) } };
  }
  if (!restoreAsked) {
    // A masked result in the history sent: restore it through the MCP tool.
    for (const m of messages) {
      const match = m.role === 'tool' ? RECEIPT.exec(toolText(m)) : null;
      if (!match) continue;
      restoreAsked = { id: 'call_restore', receipt: match[1], of: m.tool_call_id };
      return { id: restoreAsked.id, name: 'mcp__compactor__restore', args: { receipt: match[1] } };
    }
  }
  return null;
}

const upstream = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    const json = JSON.parse(body);
    const agent = (json.tools || []).some((t) => t.function && t.function.name === 'read_file');
    if (agent) received.push(json);
    const step = agent ? nextStep(json) : null;
    const reasoning = step ? `I will call ${step.name} (${step.id}) next; \u00e9t\u00e9 "quoted" \\ back` : 'Done.';
    if (step) issued[step.id] = reasoning;
    const delta = step
      ? { tool_calls: [{ index: 0, id: step.id, type: 'function', function: { name: step.name, arguments: JSON.stringify(step.args) } }] }
      : { content: agent ? `All ${READS} files read.` : 'ok' };
    const base = { id: `chatcmpl-${received.length}`, object: 'chat.completion.chunk', created: 1, model: json.model };
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const w = (o) => res.write(`data: ${JSON.stringify(o)}\n\n`);
    // The reasoning comes in two deltas, as a streaming model sends it.
    const half = Math.floor(reasoning.length / 2);
    w({ ...base, choices: [{ index: 0, delta: { role: 'assistant', reasoning_content: reasoning.slice(0, half) }, finish_reason: null }] });
    w({ ...base, choices: [{ index: 0, delta: { reasoning_content: reasoning.slice(half) }, finish_reason: null }] });
    w({ ...base, choices: [{ index: 0, delta, finish_reason: null }] });
    w({ ...base, choices: [{ index: 0, delta: {}, finish_reason: step ? 'tool_calls' : 'stop' }] });
    const tokens = Math.ceil(Buffer.byteLength(body) / 4);
    w({ ...base, choices: [], usage: { prompt_tokens: tokens, completion_tokens: 5, total_tokens: tokens + 5 } });
    res.end('data: [DONE]\n\n');
  });
});

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  const home = path.join(workDir, 'home');
  fs.mkdirSync(path.join(home, '.qwen'), { recursive: true });
  const files = writeFiles(path.join(workDir, 'files'), READS, 8000);
  const archive = path.join(workDir, 'archive');
  fs.mkdirSync(archive, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(home, '.qwen', 'settings.json'), JSON.stringify({
    usageStatisticsEnabled: false, telemetry: { enabled: false }, autoUpdate: false, enableAutoUpdate: false,
    mcpServers: { compactor: { command: cli, args: ['mcp', '--archive', archive, '--tenant-key-env', 'OPENAI_API_KEY'] } },
  }));
  const config = path.join(workDir, 'c.yaml');
  fs.writeFileSync(config, [
    'version: 1', `budget: {unit: chars, limit: ${LIMIT}, target: 125000}`, `archive: {dir: ${archive}}`,
    `plugin_dirs: ["${pluginDir}"]`, 'pipeline:',
    '  - stage: micro', '    when: over_budget', '    params: {keep_recent: 3, min_chars: 120}',
    '  - stage: summarize', '    when: over_budget', '    params: {max_chars: 1000}', ''].join('\n'));
  const upstreamPort = await listen(upstream);
  const serveLog = path.join(workDir, 'serve.log');
  const logFd = fs.openSync(serveLog, 'w');
  const { child, port } = await startServe(cli, config, workDir, { upstream: `http://127.0.0.1:${upstreamPort}` },
    { COMPACTOR_LOG: 'info' }, logFd);
  try {
    const env = { PATH: process.env.PATH, HOME: home, OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
      OPENAI_API_KEY: 'sk-qwen-test', OPENAI_MODEL: 'qwen3-coder-plus' };
    const r = await run(qwen, ['--auth-type', 'openai', '--approval-mode', 'yolo', '--output-format', 'json', '-p',
      `Read the ${READS} files in ${path.join(workDir, 'files')} one by one, then say so.`], { cwd: workDir, env });
    assert.equal(r.code, 0, `qwen exited ${r.code}: ${r.err.slice(-2000)}`);
    assert.match(r.out, new RegExp(`All ${READS} files read\\.`));
    assert.equal(reads, READS);
    assert.ok(received.length >= READS + 1, `${received.length} agent calls`);

    // Every call whose history was over the limit was compacted into it (serve's own log line
    // per call: "in→out" in the budget's unit), and every forwarded body is within it as
    // `compactor count` measures it.
    const lines = fs.readFileSync(serveLog, 'utf8').split('\n').filter((l) => l.includes('POST /v1/chat/completions 200'));
    const over = lines.map((l) => l.match(/ (\d+)→(\d+) /)).filter((m) => m && Number(m[1]) > LIMIT);
    assert.ok(over.length > 0, 'no call went over the limit: the budget forces nothing');
    for (const m of over) assert.ok(Number(m[2]) <= LIMIT, `a call over the limit went out at ${m[2]} chars`);
    checkAll(cli, workDir, received, 'openai');
    received.forEach((b, i) => {
      const counted = execFileSync(cli, ['count', '--input', path.join(workDir, `forwarded-${i}.json`), '--input-format', 'openai', '--meter', 'chars4']).toString();
      const chars = Number((counted.match(/(\d+) chars/) || [])[1]);
      assert.ok(chars <= LIMIT, `forwarded body ${i} is ${chars} chars, over the ${LIMIT} budget: ${counted}`);
      assert.deepEqual(chatRuleViolations(b.messages), [], `forwarded body ${i}`);
      // The reasoning of every assistant message still in the history, as the upstream gave it.
      for (const m of b.messages)
        if (m.role === 'assistant' && Array.isArray(m.tool_calls) && issued[m.tool_calls[0].id] !== undefined)
          assert.equal(m.reasoning_content, issued[m.tool_calls[0].id], `body ${i}: the reasoning of ${m.tool_calls[0].id}`);
    });
    // Compacted: a result replaced by its receipt marker (the tool descriptions Qwen Code lists
    // in its messages name the marker too, so only tool messages count).
    const compacted = received.filter((b) => b.messages.some((m) => m.role === 'tool' && RECEIPT.test(toolText(m))));
    assert.ok(compacted.length > 0, 'no forwarded request was compacted');

    // The model restored a masked result through the MCP tool: the file's text, as Qwen Code sent it.
    assert.ok(restoreAsked, 'no marker with a receipt reached the upstream');
    assert.ok(restoreAnswered !== null, 'the restore call was never answered');
    const original = received.find((b) => b.messages.some((m) => m.role === 'tool' && m.tool_call_id === restoreAsked.of && !RECEIPT.test(toolText(m))));
    const first = toolText(original.messages.find((m) => m.role === 'tool' && m.tool_call_id === restoreAsked.of));
    assert.ok(restoreAnswered.includes(first), `the restored text is not the result Qwen Code sent (${restoreAnswered.slice(0, 200)})`);
    const line0 = fs.readFileSync(files[Number(restoreAsked.of.split('_').pop()) - 1], 'utf8').split('\n')[0].trimEnd();
    assert.ok(first.includes(line0), `${restoreAsked.of}: ${first.slice(0, 300)} does not hold ${line0}`);
    console.log(`qwen_code: ok (${received.length} agent calls, ${compacted.length} compacted, ${over.length} over the limit ` +
      `brought within it; ${restoreAsked.receipt.slice(0, 19)}… restored through MCP, ${restoreAnswered.length} chars)`);
  } finally {
    child.kill('SIGTERM');
    upstream.close();
    clearTimeout(deadline);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
