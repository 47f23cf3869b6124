// The official OpenAI SDK (openai, pinned by package-lock.json here) driving `compactor serve`'s
// Responses route with `responses.create` as an agent loop with a function tool, non-streaming
// and streaming, against a scripted upstream this script starts on 127.0.0.1 that answers, as a
// reasoning model does, with a reasoning item (opaque encrypted_content) before each call. The
// budget forces compaction. Also the rest of the route: a context-length refusal as the first
// event of a 200 stream is retried once after on_prompt_too_long; `previous_response_id` requests
// and `/v1/responses/compact` pass through marked so; a WebSocket upgrade on /v1/responses is
// answered at once with 426, which tells a client to use HTTP. Nothing leaves the machine.
//
// usage: node openai_sdk_responses.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const OpenAI = require('openai');
const { listen, closedPort, startServe, checkAll } = require('../lib/harness.js');

const [cli, pluginDir, workDir] = process.argv.slice(2);
const deadline = setTimeout(() => { console.error('openai_sdk_responses: timed out'); process.exit(1); }, 120000);
const READS = 12;
const LIMIT = 30000;

// ---- the scripted upstream -------------------------------------------------------------------
const received = [];
const issued = new Map();
let n = 0, refuseNextStream = false, refusals = 0;
function output(input) {
  n += 1;
  const id = `rs_${n}`;
  const enc = `gAAAAB${Buffer.from(`${id}/${'r'.repeat(60)}`).toString('base64')}+/=`;
  issued.set(id, enc);
  const reasoning = { type: 'reasoning', id, summary: [], encrypted_content: enc };
  // Compaction masks outputs but keeps every call: the calls made so far say where the loop is.
  const calls = input.filter((i) => i.type === 'function_call').length;
  if (calls < READS)
    return [reasoning, { type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name: 'read_file', arguments: JSON.stringify({ n: calls + 1 }), status: 'completed' }];
  return [reasoning, { type: 'message', id: `msg_${n}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'All read.', annotations: [] }] }];
}
const upstream = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    received.push({ method: req.method, url: req.url, headers: req.headers, body });
    if (req.url === '/v1/responses/compact') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'cmp_1', object: 'response.compaction', output: [{ type: 'compaction', encrypted_content: 'gAAAAB-compacted' }] }));
      return;
    }
    const json = JSON.parse(body);
    const response = (status, out) => ({ id: `resp_${n}`, object: 'response', created_at: 1, status, model: json.model, output: out,
      usage: { input_tokens: 100, input_tokens_details: { cached_tokens: 0 }, output_tokens: 10, output_tokens_details: { reasoning_tokens: 5 }, total_tokens: 110 } });
    if (!json.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(response('completed', output(json.input))));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let seq = 0;
    const ev = (o) => res.write(`event: ${o.type}\ndata: ${JSON.stringify({ ...o, sequence_number: seq++ })}\n\n`);
    if (refuseNextStream) {
      refuseNextStream = false;
      refusals += 1;
      ev({ type: 'response.failed', response: { ...response('failed', []), error: { code: 'context_length_exceeded',
        message: 'Your input exceeds the context window of this model.' } } });
      res.end();
      return;
    }
    const out = output(json.input);
    ev({ type: 'response.created', response: response('in_progress', []) });
    out.forEach((item, i) => {
      ev({ type: 'response.output_item.added', output_index: i, item });
      ev({ type: 'response.output_item.done', output_index: i, item });
    });
    ev({ type: 'response.completed', response: response('completed', out) });
    res.end();
  });
});

// The rules, from the API's documentation: calls and outputs paired by call_id (output after its
// call), unique item ids, a reasoning item followed by its call or message.
function ruleBreaks(input) {
  const out = [], calls = new Set(), answered = new Set(), ids = new Set();
  input.forEach((item, i) => {
    if (item.id !== undefined) { if (ids.has(item.id)) out.push(`dup ${item.id}`); ids.add(item.id); }
    if (item.type === 'function_call') calls.add(item.call_id);
    if (item.type === 'function_call_output') { if (!calls.has(item.call_id)) out.push(`orphan ${item.call_id}`); answered.add(item.call_id); }
    if (item.type === 'reasoning' && !['function_call', 'message'].includes((input[i + 1] || {}).type)) out.push(`reasoning ${item.id} alone`);
  });
  for (const c of calls) if (!answered.has(c)) out.push(`unanswered ${c}`);
  return out;
}

async function agentLoop(openai, stream) {
  const input = [{ role: 'developer', content: 'You read files with read_file.' }, { role: 'user', content: 'Read the files 1 to 12.' }];
  const tools = [{ type: 'function', name: 'read_file', parameters: { type: 'object', properties: { n: { type: 'integer' } } }, strict: false }];
  const statuses = [];
  for (let turn = 0; turn < READS + 2; turn++) {
    const request = { model: 'gpt-5.1', input, tools, store: false, include: ['reasoning.encrypted_content'] };
    let out;
    if (!stream) {
      const { data, response } = await openai.responses.create(request).withResponse();
      statuses.push(response.headers.get('x-compactor-status'));
      out = data.output;
    } else {
      const { data: events, response } = await openai.responses.create({ ...request, stream: true }).withResponse();
      statuses.push(response.headers.get('x-compactor-status'));
      for await (const event of events) if (event.type === 'response.completed') out = event.response.output;
    }
    input.push(...out);
    const calls = out.filter((i) => i.type === 'function_call');
    if (calls.length === 0) return { text: out.at(-1).content[0].text, statuses };
    for (const call of calls)
      input.push({ type: 'function_call_output', call_id: call.call_id, output: `file ${JSON.parse(call.arguments).n}: ${'text '.repeat(900)}` });
  }
  throw new Error('the loop did not end');
}

function upgrade(port) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n' +
      'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'));
    let text = '';
    socket.on('data', (d) => { text += d; });
    socket.on('end', () => resolve({ text, ms: Date.now() - started }));
    socket.on('error', reject);
  });
}

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(workDir, { recursive: true });
  const config = path.join(workDir, 'c.yaml');
  fs.writeFileSync(config, ['version: 1', `budget: {unit: chars, limit: ${LIMIT}, target: 24000}`, 'archive: {dir: archive}',
    `plugin_dirs: ["${pluginDir}"]`, 'pipeline:', '  - stage: micro', '    when: over_budget', '    params: {keep_recent: 2, min_chars: 120}',
    'on_prompt_too_long:', '  - stage: reactive_compact', '    params: {keep_messages: 4, max_chars: 2000}', ''].join('\n'));
  const upstreamPort = await listen(upstream);
  const dead = `http://127.0.0.1:${await closedPort()}`;
  const { child, port } = await startServe(cli, config, workDir, { upstream: dead, openaiUpstream: `http://127.0.0.1:${upstreamPort}` });
  try {
    const openai = new OpenAI({ apiKey: 'sk-responses-test', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    for (const stream of [false, true]) {
      const before = received.length;
      const r = await agentLoop(openai, stream);
      assert.equal(r.text, 'All read.');
      assert.ok(r.statuses.includes('compacted'), `${stream ? 'streaming' : 'not streaming'}: nothing compacted: ${r.statuses}`);
      const bodies = received.slice(before).map((q) => q.body);
      bodies.forEach((b, i) => {
        const input = JSON.parse(b).input;
        assert.deepEqual(ruleBreaks(input), [], `body ${i}`);
        for (const item of input.filter((x) => x.type === 'reasoning')) assert.equal(item.encrypted_content, issued.get(item.id));
        assert.ok(b.length < LIMIT * 1.2, `body ${i} is ${b.length} bytes`);
      });
      checkAll(cli, workDir, bodies, 'responses');
    }

    // A refusal in the stream's first event: on_prompt_too_long runs and the call is sent again.
    refuseNextStream = true;
    const before = received.length;
    const big = [{ role: 'user', content: 'go' }];
    for (let i = 1; i <= 8; i++) {
      big.push({ type: 'function_call', call_id: `c${i}`, name: 'read_file', arguments: `{"n":${i}}` });
      big.push({ type: 'function_call_output', call_id: `c${i}`, output: `file ${i} ${'x'.repeat(1500)}` });
    }
    const { data: events, response } = await openai.responses.create({ model: 'gpt-5.1', input: big, stream: true }).withResponse();
    assert.equal(response.headers.get('x-compactor-status'), 'retried');
    const types = [];
    for await (const event of events) types.push(event.type);
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.equal(refusals, 1);
    assert.equal(received.length - before, 2);
    assert.ok(received.at(-1).body.length < received.at(-2).body.length, 'the retry was not smaller');

    // Server-side state and the API's other endpoints pass through, marked so.
    const passed = await fetch(`http://127.0.0.1:${port}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-5.1', previous_response_id: 'resp_1', input: [{ role: 'user', content: 'x'.repeat(40000) }] }) });
    assert.equal(passed.headers.get('x-compactor-status'), 'passed');
    await passed.text();
    assert.equal(received.at(-1).body.length > 40000, true);
    const compact = await fetch(`http://127.0.0.1:${port}/v1/responses/compact`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-5.1', input: big }) });
    assert.equal(compact.status, 200);
    assert.equal(compact.headers.get('x-compactor-status'), 'passed');
    assert.equal((await compact.json()).output[0].type, 'compaction');
    assert.equal(received.at(-1).url, '/v1/responses/compact');

    // A WebSocket upgrade is answered at once: 426 Upgrade Required, the connection closed.
    const ws = await upgrade(port);
    assert.match(ws.text, /^HTTP\/1\.1 426 /);
    assert.ok(ws.ms < 2000, `${ws.ms} ms`);
    console.log(`openai_sdk_responses: ok (${received.length} upstream requests; 426 to the upgrade in ${ws.ms} ms)`);
  } finally {
    child.kill('SIGTERM');
    upstream.close();
    clearTimeout(deadline);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
