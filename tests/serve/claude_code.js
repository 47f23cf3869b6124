// Claude Code itself (npm @anthropic-ai/claude-code, pinned by package-lock.json) runs a
// multi-turn tool task through `compactor serve`: 30 Read calls of 8 KB files, answered by a
// scripted upstream this script starts on 127.0.0.1. The budget is small enough that compaction
// happens; Claude Code must finish, and every body the upstream received must pass the checkers.
// Claude Code's other traffic is off (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC) and any request
// it would still make elsewhere goes to a proxy on a closed loopback port: nothing leaves the machine.
//
// usage: node claude_code.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');

const [cli, pluginDir, workDir] = process.argv.slice(2);
const claude = path.join(__dirname, 'node_modules', '.bin', 'claude');
const READS = 30;
const deadline = setTimeout(() => { console.error('claude_code: timed out'); process.exit(1); }, 280000);

// ---- the scripted upstream: one Read per turn until READS, then a final answer --------------
const received = [];
let reads = 0;
function answer(res, json, content, stopReason) {
  const message = { id: `msg_${received.length}`, type: 'message', role: 'assistant', model: json.model, content,
    stop_reason: stopReason, stop_sequence: null, usage: { input_tokens: 100, output_tokens: 20 } };
  if (!json.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(message));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const ev = (type, o) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...o })}\n\n`);
  ev('message_start', { message: { ...message, content: [], stop_reason: null } });
  content.forEach((block, index) => {
    if (block.type === 'text') {
      ev('content_block_start', { index, content_block: { type: 'text', text: '' } });
      ev('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    } else {
      ev('content_block_start', { index, content_block: { ...block, input: {} } });
      ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    }
    ev('content_block_stop', { index });
  });
  ev('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 20 } });
  ev('message_stop', {});
  res.end();
}
const upstream = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    received.push({ url: req.url, body });
    const json = body ? JSON.parse(body) : {};
    if (!req.url.startsWith('/v1/messages') || req.url.startsWith('/v1/messages/count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"input_tokens":100}');
      return;
    }
    const agent = Array.isArray(json.tools) && json.tools.some((t) => t.name === 'Read');
    if (agent && reads < READS) {
      reads += 1;
      const file = path.join(workDir, 'files', `f${String(reads).padStart(2, '0')}.txt`);
      answer(res, json, [{ type: 'text', text: `Reading file ${reads}.` },
        { type: 'tool_use', id: `toolu_read_${reads}`, name: 'Read', input: { file_path: file } }], 'tool_use');
    } else {
      answer(res, json, [{ type: 'text', text: agent ? `All ${READS} files read.` : 'ok' }], 'end_turn');
    }
  });
});

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}
function closedPort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}
function startServe(config, upstreamPort) {
  return new Promise((resolve, reject) => {
    const child = spawn(cli, ['serve', '--config', config, '--listen', '127.0.0.1:0', '--upstream', `http://127.0.0.1:${upstreamPort}`],
      { cwd: workDir, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.on('exit', (code) => reject(new Error(`compactor serve exited ${code}: ${out}`)));
  });
}
function run(cmd, args, options) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(path.join(workDir, 'files'), { recursive: true });
  fs.mkdirSync(path.join(workDir, 'home'));
  for (let i = 1; i <= READS; i++) {
    const lines = [];
    for (let l = 0; l < 100; l++) lines.push(`file ${i} line ${l}: ${'lorem ipsum dolor sit amet '.repeat(3)}`);
    fs.writeFileSync(path.join(workDir, 'files', `f${String(i).padStart(2, '0')}.txt`), lines.join('\n'));
  }
  const config = path.join(workDir, 'c.yaml');
  // Claude Code's system prompt and tools are about 74,000 chars and count in the budget.
  fs.writeFileSync(config, [
    'version: 1', 'budget: {unit: chars, limit: 150000, target: 120000}', 'archive: {dir: archive}',
    `plugin_dirs: ["${pluginDir}"]`, 'pipeline:',
    '  - stage: micro', '    when: over_budget', '    params: {keep_recent: 3, min_chars: 120}',
    '  - stage: summarize', '    when: over_budget', '    params: {max_chars: 1000}', ''].join('\n'));
  const upstreamPort = await listen(upstream);
  const { child, port } = await startServe(config, upstreamPort);
  const deadProxy = `http://127.0.0.1:${await closedPort()}`;
  try {
    const env = {
      PATH: process.env.PATH, HOME: path.join(workDir, 'home'),
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_API_KEY: 'sk-ant-claude-code-test',
      DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      HTTPS_PROXY: deadProxy, HTTP_PROXY: deadProxy, NO_PROXY: '127.0.0.1,localhost',
    };
    const r = await run(claude, ['-p', `Read the ${READS} files in ${path.join(workDir, 'files')} one by one, then say so.`,
      '--allowedTools', 'Read', '--model', 'claude-sonnet-4-5'], { cwd: workDir, env });
    assert.equal(r.code, 0, `claude exited ${r.code}: ${r.err}`);
    assert.match(r.out, new RegExp(`All ${READS} files read\\.`));
    assert.equal(reads, READS);
    const agentCalls = received.filter((q) => q.url.startsWith('/v1/messages?') || q.url === '/v1/messages')
      .map((q) => JSON.parse(q.body)).filter((b) => Array.isArray(b.tools) && b.tools.some((t) => t.name === 'Read'));
    assert.ok(agentCalls.length >= READS + 1, `${agentCalls.length} agent calls`);
    // Compaction happened: later requests carry receipt markers instead of the older results.
    const compacted = agentCalls.filter((b) => JSON.stringify(b.messages).includes('[compactor '));
    assert.ok(compacted.length > 0, 'no forwarded request was compacted');
    // Every forwarded body passes the checkers as it was sent (system entries inside messages,
    // which Claude Code may send, included).
    agentCalls.forEach((b, i) => {
      const file = path.join(workDir, `forwarded-${i}.json`);
      fs.writeFileSync(file, JSON.stringify(b));
      execFileSync(cli, ['check', '--input', file], { stdio: ['ignore', 'ignore', 'inherit'] });
    });
    console.log(`claude_code: ok (${agentCalls.length} agent calls, ${compacted.length} compacted)`);
  } finally {
    child.kill('SIGTERM');
    upstream.close();
    clearTimeout(deadline);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
