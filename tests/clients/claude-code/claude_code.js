// Claude Code itself (npm @anthropic-ai/claude-code, pinned by package-lock.json here; a native
// binary that runs on Node 20) with its default model runs a multi-turn tool task through
// `compactor serve`: 30 Read calls of 30 KB files, answered by a scripted upstream this script
// starts on 127.0.0.1, which reports as input tokens a quarter of the bytes it received.
//
// Claude Code compacts on its own (auto-compact) when the usage reported for its last request
// nears its window; the window is set to 100,000 tokens (CLAUDE_CODE_AUTO_COMPACT_WINDOW, the
// smallest it takes) so that 30 files overflow it. First, without Compactor, the control run
// shows that auto-compact does trigger on this task; then, through `compactor serve` keeping the
// history under its budget, it must never trigger: Claude Code finishes, every forwarded body
// passes the checkers and is within the budget, calls past the limit are compacted, and Claude
// Code's mid-conversation system entries reach the upstream.
//
// Claude Code's other traffic is off (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC) and any request it
// would still make elsewhere goes to a proxy on a closed loopback port: nothing leaves the machine.
//
// usage: node claude_code.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { listen, closedPort, startServe, run, checkAll, writeFiles } = require('../lib/harness.js');
const { writeMessage } = require('../lib/messages_reply.js');

const [cli, pluginDir, workDir] = process.argv.slice(2);
const claude = path.join(__dirname, 'node_modules', '.bin', 'claude');
const READS = 30;
const LIMIT = 200000;  // chars, system and tools included
const AUTO_COMPACT = 'Please provide your summary based on the conversation so far';
const deadline = setTimeout(() => { console.error('claude_code: timed out'); process.exit(1); }, 560000);

// ---- the scripted upstream: one Read per turn until READS, then a final answer ---------------
function scriptedUpstream(files) {
  const state = { received: [], reads: 0, autoCompacts: 0 };
  const answer = (res, json, content, stopReason, inputTokens) => {
    const message = { id: `msg_${state.received.length}`, type: 'message', role: 'assistant', model: json.model, content,
      stop_reason: stopReason, stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: 20 } };
    writeMessage(res, message, json.stream);
  };
  state.server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      state.received.push({ url: req.url, body });
      const json = body ? JSON.parse(body) : {};
      if (!req.url.startsWith('/v1/messages') || req.url.startsWith('/v1/messages/count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"input_tokens":100}');
        return;
      }
      const tokens = Math.ceil(Buffer.byteLength(body) / 4);
      if (body.includes(AUTO_COMPACT)) {
        state.autoCompacts += 1;
        answer(res, json, [{ type: 'text', text: '<analysis>ok</analysis>\n<summary>Files were read one by one.</summary>' }], 'end_turn', tokens);
        return;
      }
      const agent = Array.isArray(json.tools) && json.tools.some((t) => t.name === 'Read');
      if (agent && state.reads < READS) {
        state.reads += 1;
        answer(res, json, [{ type: 'text', text: `Reading file ${state.reads}.` },
          { type: 'tool_use', id: `toolu_read_${state.reads}`, name: 'Read', input: { file_path: files[state.reads - 1] } }], 'tool_use', tokens);
      } else {
        answer(res, json, [{ type: 'text', text: agent ? `All ${READS} files read.` : 'ok' }], 'end_turn', tokens);
      }
    });
  });
  return state;
}

async function claudeCode(baseUrl, deadProxy, until) {
  const env = {
    PATH: process.env.PATH, HOME: path.join(workDir, 'home'),
    ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: 'sk-ant-claude-code-test',
    DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', CLAUDE_CODE_AUTO_COMPACT_WINDOW: '100000',
    HTTPS_PROXY: deadProxy, HTTP_PROXY: deadProxy, NO_PROXY: '127.0.0.1,localhost',
  };
  return run(claude, ['-p', `Read the ${READS} files in ${path.join(workDir, 'files')} one by one, then say so.`,
    '--allowedTools', 'Read'], { cwd: workDir, env, until });
}

const agentBodies = (received) => received.filter((q) => q.url.startsWith('/v1/messages?') || q.url === '/v1/messages')
  .map((q) => JSON.parse(q.body)).filter((b) => Array.isArray(b.tools) && b.tools.some((t) => t.name === 'Read'));

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(path.join(workDir, 'home'), { recursive: true });
  const files = writeFiles(path.join(workDir, 'files'), READS, 30000);
  const deadProxy = `http://127.0.0.1:${await closedPort()}`;

  // ---- control: without Compactor, auto-compact triggers on this task --------------------
  const control = scriptedUpstream(files);
  const controlPort = await listen(control.server);
  await claudeCode(`http://127.0.0.1:${controlPort}`, deadProxy, () => control.autoCompacts > 0);
  control.server.close();
  assert.ok(control.autoCompacts > 0, 'the control run never auto-compacted: this test would prove nothing');
  console.log(`claude_code: control: auto-compact after ${control.reads} reads without compactor serve`);

  // ---- through compactor serve ----------------------------------------------------------------
  const config = path.join(workDir, 'c.yaml');
  fs.writeFileSync(config, [
    'version: 1', `budget: {unit: chars, limit: ${LIMIT}, target: 160000}`, 'archive: {dir: archive}',
    `plugin_dirs: ["${pluginDir}"]`, 'pipeline:',
    '  - stage: micro', '    when: over_budget', '    params: {keep_recent: 3, min_chars: 120}',
    '  - stage: summarize', '    when: over_budget', '    params: {max_chars: 1000}', ''].join('\n'));
  const upstream = scriptedUpstream(files);
  const upstreamPort = await listen(upstream.server);
  const { child, port } = await startServe(cli, config, workDir, { upstream: `http://127.0.0.1:${upstreamPort}` });
  try {
    const r = await claudeCode(`http://127.0.0.1:${port}`, deadProxy);
    assert.equal(r.code, 0, `claude exited ${r.code}: ${r.out} ${r.err}`);
    assert.match(r.out, new RegExp(`All ${READS} files read\\.`));
    assert.equal(upstream.reads, READS);
    assert.equal(upstream.autoCompacts, 0, 'Claude Code auto-compacted through compactor serve');
    const bodies = agentBodies(upstream.received);
    assert.ok(bodies.length >= READS + 1, `${bodies.length} agent calls`);
    // Claude Code's default model sends mid-conversation system entries; they reach the upstream.
    assert.ok(bodies.some((b) => b.messages.some((m) => m.role === 'system')), 'no system entry was forwarded');
    // Compaction happened: later requests carry receipt markers instead of the older results.
    const compacted = bodies.filter((b) => JSON.stringify(b.messages).includes('[compactor '));
    assert.ok(compacted.length > 0, 'no forwarded request was compacted');
    // Every forwarded body passes the checkers and is within the budget (system and tools counted).
    checkAll(cli, workDir, bodies);
    bodies.forEach((b, i) => {
      const counted = execFileSync(cli, ['count', '--input', path.join(workDir, `forwarded-${i}.json`), '--meter', 'chars4']).toString();
      const chars = Number((counted.match(/(\d+) chars/) || [])[1]);
      assert.ok(chars <= LIMIT, `forwarded body ${i} is ${chars} chars, over the ${LIMIT} budget: ${counted}`);
    });
    console.log(`claude_code: ok (${bodies.length} agent calls, ${compacted.length} compacted, no auto-compact; ` +
      `the largest forwarded body ${Math.max(...bodies.map((b) => JSON.stringify(b).length))} bytes)`);
  } finally {
    child.kill('SIGTERM');
    upstream.server.close();
    clearTimeout(deadline);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
