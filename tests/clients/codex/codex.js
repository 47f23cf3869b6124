// Codex CLI itself (npm @openai/codex, pinned by package-lock.json here; a native binary that
// runs on Node 20) runs a multi-turn tool task through `compactor serve`'s Responses route: 30
// exec_command calls that each `cat` a 6,000-char file, answered by a scripted upstream this
// script starts on 127.0.0.1, which speaks the Responses API's event stream and gives, as a real
// reasoning model would, a `reasoning` item with an opaque `encrypted_content` before every call.
//
// The budget (100,000 chars, instructions and tools counted) is far below what the 30 outputs
// need, so compaction must happen. Checked: Codex finishes; every body the upstream received
// meets the Responses API's rules (an independent checker below, written from the API's
// documentation, and `compactor check`), is within the budget as `compactor count` measures it,
// keeps Codex's developer messages and environment context first and byte-identical, and every
// encrypted_content the upstream issued that is still in the history comes back byte-identical;
// later calls are compacted. Midway, the upstream has Codex call the `restore` tool of
// `compactor mcp` (configured as [mcp_servers.compactor]) with the receipt of a masked output, and
// the restored text reaches the next call.
//
// Codex's other traffic is off (plugins, analytics, OpenTelemetry) and any request it would still
// make elsewhere goes to a proxy on a closed loopback port: nothing leaves the machine.
//
// usage: node codex.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR
//        node codex.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR --record SESSION.jsonl
// The second form records a Codex session file for the tests' data: Codex straight against the
// scripted upstream (no compactor), 12 reads of 3,000-char files, its rollout copied to SESSION.
'use strict';
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { listen, closedPort, startServe, run, checkAll, writeFiles } = require('../lib/harness.js');

const [cli, pluginDir, workDir, recordFlag, recordTo] = process.argv.slice(2);
const recording = recordFlag === '--record';
const codex = path.join(__dirname, 'node_modules', '.bin', 'codex');
const READS = recording ? 12 : 30;
const RESTORE_AT = 20;  // after this read, one restore call through the MCP server
const LIMIT = 100000;  // chars, instructions and tools included
const deadline = setTimeout(() => { console.error('codex: timed out'); process.exit(1); }, 560000);

// ---- the scripted upstream ----------------------------------------------------------------------
function scriptedUpstream(files) {
  const state = { received: [], reads: 0, issued: new Map(), restoreAsked: null, n: 0 };
  const respond = (res, output) => {
    state.n += 1;
    const id = `resp_${state.n}`;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const ev = (o) => res.write(`event: ${o.type}\ndata: ${JSON.stringify(o)}\n\n`);
    ev({ type: 'response.created', response: { id, object: 'response', status: 'in_progress', output: [] } });
    output.forEach((item, i) => {
      ev({ type: 'response.output_item.added', output_index: i, item });
      ev({ type: 'response.output_item.done', output_index: i, item });
    });
    ev({ type: 'response.completed', response: { id, object: 'response', status: 'completed', output,
      usage: { input_tokens: 1000, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20,
        output_tokens_details: { reasoning_tokens: 10 }, total_tokens: 1020 } } });
    res.end();
  };
  const reasoning = () => {
    // Opaque, as a real model's: base64-looking text with '+', '/' and '=' that must not change.
    const id = `rs_${state.n + 1}`;
    const enc = `gAAAAB${Buffer.from(`${id}:${'x'.repeat(200)}:${state.n}`).toString('base64')}+/==`;
    state.issued.set(id, enc);
    return { type: 'reasoning', id, summary: [{ type: 'summary_text', text: 'Reading the next file.' }], encrypted_content: enc };
  };
  state.server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      state.received.push({ method: req.method, url: req.url, body });
      if (req.method !== 'POST' || req.url !== '/v1/responses') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"not here","type":"invalid_request_error"}}');
        return;
      }
      const json = JSON.parse(body);
      // Codex offers an MCP server's tools as a namespace of functions (mcp__compactor: restore,
      // search); the model calls one by its name and the namespace.
      const namespace = (json.tools || []).find((t) => t.type === 'namespace' && (t.tools || []).some((u) => u.name === 'restore'));
      const restoreTool = namespace ? { namespace: namespace.name, name: 'restore' } : null;
      const call = (name, args) => ({ type: 'function_call', id: `fc_${state.n + 1}`, call_id: `call_${state.n + 1}`, name,
        arguments: JSON.stringify(args), status: 'completed' });
      if (state.reads === RESTORE_AT && !state.restoreAsked) {
        // Restore the masked output of the first read, by the receipt its marker names.
        const text = JSON.stringify(json.input);
        const receipt = (text.match(/sha256:[0-9a-f]{64}/) || [])[0];
        state.restoreAsked = { receipt, tool: restoreTool };
        if (!restoreTool || !receipt) {
          // Reported by main() once Codex has ended (an exception here would only cut the stream).
          state.restoreAsked.failure = `restore tool ${JSON.stringify(restoreTool)}, receipt ${receipt}`;
          respond(res, [reasoning(), { type: 'message', id: `msg_${state.n + 1}`, role: 'assistant', status: 'completed',
            content: [{ type: 'output_text', text: 'Cannot restore.', annotations: [] }] }]);
          return;
        }
        respond(res, [reasoning(), { ...call(restoreTool.name, { receipt }), namespace: restoreTool.namespace }]);
        return;
      }
      if (state.reads < READS) {
        state.reads += 1;
        respond(res, [reasoning(), call('exec_command', { cmd: `cat ${files[state.reads - 1]}` })]);
        return;
      }
      respond(res, [reasoning(), { type: 'message', id: `msg_${state.n + 1}`, role: 'assistant', status: 'completed',
        content: [{ type: 'output_text', text: `All ${READS} files read.`, annotations: [] }] }]);
    });
  });
  return state;
}

// ---- the Responses API's rules, from its documentation (not from the adapter) -------------------
// - every function_call / custom_tool_call has an output item with the same call_id after it,
//   and every output a call with that call_id before it;
// - item ids are unique in the input;
// - a reasoning item is followed by the item it belongs to (a call or a message), never last and
//   never right before an output.
function responsesRuleBreaks(input) {
  const breaks = [];
  const calls = new Map(), outputs = new Set(), ids = new Set();
  input.forEach((item, i) => {
    const type = item.type || 'message';
    if (item.id !== undefined) {
      if (ids.has(item.id)) breaks.push(`input.${i}: item id ${item.id} used twice`);
      ids.add(item.id);
    }
    if (type === 'function_call' || type === 'custom_tool_call') calls.set(item.call_id, i);
    if (type === 'function_call_output' || type === 'custom_tool_call_output') {
      if (!calls.has(item.call_id)) breaks.push(`input.${i}: output for ${item.call_id} without a call before it`);
      outputs.add(item.call_id);
    }
    if (type === 'reasoning') {
      const next = input[i + 1];
      const nextType = next && (next.type || 'message');
      if (!next || !['function_call', 'custom_tool_call', 'message'].includes(nextType))
        breaks.push(`input.${i}: reasoning item ${item.id} is not followed by its item`);
    }
  });
  for (const [id, i] of calls) if (!outputs.has(id)) breaks.push(`input.${i}: call ${id} has no output`);
  return breaks;
}

function writeConfig(home, baseUrl, compactorConfig, websockets = false) {
  const mcp = compactorConfig ? ['[mcp_servers.compactor]', `command = ${JSON.stringify(cli)}`,
    `args = ["mcp", "--config", ${JSON.stringify(compactorConfig)}, "--tenant-key-env", "CODEX_TEST_KEY"]`,
    // Codex gives an MCP server only the variables it names: the key, whose tenant serve archived for.
    'env_vars = ["CODEX_TEST_KEY"]'] : [];
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(path.join(home, 'config.toml'), [
    'model = "gpt-5.1-codex"', 'model_provider = "local"', 'approval_policy = "never"', 'sandbox_mode = "danger-full-access"',
    '[model_providers.local]', 'name = "local"', `base_url = "${baseUrl}/v1"`, 'env_key = "CODEX_TEST_KEY"',
    'wire_api = "responses"', `supports_websockets = ${websockets}`, 'request_max_retries = 0', 'stream_max_retries = 0',
    '[features]', 'plugins = false', '[analytics]', 'enabled = false', '[otel]', 'exporter = "none"',
    ...mcp, ''].join('\n'));
}

function codexRun(home, deadProxy) {
  const env = { PATH: process.env.PATH, HOME: workDir, CODEX_HOME: home, CODEX_TEST_KEY: 'sk-codex-test',
    HTTPS_PROXY: deadProxy, HTTP_PROXY: deadProxy, NO_PROXY: '127.0.0.1,localhost' };
  return run(codex, ['exec', '--skip-git-repo-check', '--json', '-C', workDir,
    `Read the ${READS} files in ${path.join(workDir, 'files')} one by one with cat, then say so.`], { cwd: workDir, env });
}

async function record() {
  const upstream = scriptedUpstream(writeFiles(path.join(workDir, 'files'), READS, 3000));
  const home = path.join(workDir, 'codex-home');
  writeConfig(home, `http://127.0.0.1:${await listen(upstream.server)}`, null);
  const r = await codexRun(home, `http://127.0.0.1:${await closedPort()}`);
  upstream.server.close();
  clearTimeout(deadline);
  assert.equal(r.code, 0, r.err);
  const sessions = path.join(home, 'sessions');
  const rollout = fs.readdirSync(sessions, { recursive: true }).find((f) => f.endsWith('.jsonl'));
  fs.copyFileSync(path.join(sessions, rollout), recordTo);
  console.log(`codex: recorded ${upstream.n} calls to ${recordTo}`);
}

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(workDir, { recursive: true });
  if (recording) return record();
  const files = writeFiles(path.join(workDir, 'files'), READS, 6000);
  const deadProxy = `http://127.0.0.1:${await closedPort()}`;
  const config = path.join(workDir, 'c.yaml');
  fs.writeFileSync(config, [
    'version: 1', `budget: {unit: chars, limit: ${LIMIT}, target: 80000}`, `archive: {dir: ${path.join(workDir, 'archive')}}`,
    `plugin_dirs: ["${pluginDir}"]`, 'pipeline:',
    '  - stage: micro', '    when: over_budget', '    params: {keep_recent: 3, min_chars: 120}',
    '  - stage: summarize', '    when: over_budget', '    params: {max_chars: 1000}', ''].join('\n'));
  const upstream = scriptedUpstream(files);
  const upstreamPort = await listen(upstream.server);
  const { child, port } = await startServe(cli, config, workDir, { upstream: deadProxy, openaiUpstream: `http://127.0.0.1:${upstreamPort}` });
  try {
    const home = path.join(workDir, 'codex-home');
    writeConfig(home, `http://127.0.0.1:${port}`, config);
    const r = await codexRun(home, deadProxy);
    assert.ok(!upstream.restoreAsked || !upstream.restoreAsked.failure, upstream.restoreAsked && upstream.restoreAsked.failure);
    assert.equal(r.code, 0, `codex exited ${r.code}: ${r.out.slice(-2000)} ${r.err.slice(-2000)}`);
    assert.match(r.out, new RegExp(`All ${READS} files read\\.`));
    assert.equal(upstream.reads, READS);
    const bodies = upstream.received.filter((q) => q.method === 'POST' && q.url === '/v1/responses').map((q) => q.body);
    assert.ok(bodies.length >= READS + 2, `${bodies.length} calls`);
    const parsed = bodies.map((b) => JSON.parse(b));
    const first = parsed[0].input;
    const head = first.slice(0, first.findIndex((i) => i.role === 'user' && !JSON.stringify(i.content).includes('<environment_context>')));
    assert.ok(head.some((i) => i.role === 'developer') && head.some((i) => JSON.stringify(i).includes('<environment_context>')));
    let compacted = 0, reasoningKept = 0;
    parsed.forEach((b, k) => {
      assert.deepEqual(responsesRuleBreaks(b.input), [], `body ${k} breaks the API's rules`);
      // The head (developer messages, environment context) first and as Codex sent it.
      assert.deepEqual(b.input.slice(0, head.length), head, `body ${k}: the head changed`);
      // Every encrypted_content the upstream issued that is still here, byte for byte (in the
      // raw bytes too: the JSON string as the upstream wrote it).
      for (const item of b.input.filter((i) => i.type === 'reasoning' && upstream.issued.has(i.id))) {
        assert.equal(item.encrypted_content, upstream.issued.get(item.id), `body ${k}: ${item.id} changed`);
        assert.ok(bodies[k].includes(JSON.stringify(upstream.issued.get(item.id))));
        reasoningKept += 1;
      }
      if (JSON.stringify(b.input).includes('[compactor ')) compacted += 1;  // a marker (the MCP tools' text names one too)
    });
    assert.ok(compacted > 0, 'no call was compacted');
    assert.ok(reasoningKept > READS, `only ${reasoningKept} reasoning items came back`);
    // compactor's own reading of the same bodies: the API's rules, and within the budget.
    checkAll(cli, workDir, bodies, 'responses');
    let largest = 0;
    bodies.forEach((b, i) => {
      const counted = execFileSync(cli, ['count', '--input', path.join(workDir, `forwarded-${i}.json`), '--input-format', 'responses',
        '--meter', 'chars4']).toString();
      const chars = Number((counted.match(/(\d+) chars/) || [])[1]);
      largest = Math.max(largest, chars);
      assert.ok(chars <= LIMIT, `forwarded body ${i} is ${chars} chars, over the ${LIMIT} budget: ${counted}`);
    });
    // The restore through compactor mcp: the call after it carries the masked file's text.
    assert.ok(upstream.restoreAsked, 'the restore call was never made');
    const restoredIn = parsed.find((b) => b.input.some((i) => i.type === 'function_call_output' && i.call_id &&
      b.input.some((c) => c.type === 'function_call' && c.call_id === i.call_id && c.name === 'restore') &&
      JSON.stringify(i.output).includes('file 1 line 0')));
    assert.ok(restoredIn, 'the restored output never reached the upstream');
    // With its WebSocket transport on, Codex first asks for an upgrade on /v1/responses: serve's
    // 426 sends it to HTTP at once (no retries, no backoff), and the call goes through.
    const wsHome = path.join(workDir, 'codex-home-ws');
    writeConfig(wsHome, `http://127.0.0.1:${port}`, null, true);
    const started = Date.now();
    const ws = await codexRun(wsHome, deadProxy);
    const wsSeconds = (Date.now() - started) / 1000;
    assert.equal(ws.code, 0, ws.err.slice(-2000));
    assert.match(ws.out, new RegExp(`All ${READS} files read\\.`));
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const upgrades = Number((metrics.match(/route="responses",outcome="upgrade_refused"} (\d+)/) || [])[1]);
    assert.ok(upgrades >= 1 && upgrades <= 2, `${upgrades} upgrade attempts: ${metrics}`);
    assert.ok(wsSeconds < 20, `${wsSeconds} s with WebSocket on`);
    console.log(`codex: ok (${bodies.length} calls, ${compacted} compacted, largest ${largest} chars of ${LIMIT}; ` +
      `${reasoningKept} reasoning items came back byte-identical; restore of ${upstream.restoreAsked.receipt.slice(0, 15)}… through compactor mcp; ` +
      `with WebSocket on: ${upgrades} upgrade answered 426, fell back to HTTP, done in ${wsSeconds.toFixed(1)} s)`);
  } finally {
    child.kill('SIGTERM');
    upstream.server.close();
    clearTimeout(deadline);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
