// The official Anthropic SDK (@anthropic-ai/sdk, pinned by package-lock.json here) driving
// `compactor serve`, non-streaming and streaming, against a fake upstream this script starts on
// 127.0.0.1 (a free port) and which records what it received. Nothing leaves the machine.
//
// usage: node anthropic_sdk.js COMPACTOR_CLI PLUGIN_DIR SESSION.json WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const Anthropic = require('@anthropic-ai/sdk');
const { listen, startServe, checkAll } = require('../lib/harness.js');

const [cli, pluginDir, sessionFile, workDir] = process.argv.slice(2);
const deadline = setTimeout(() => { console.error('anthropic_sdk: timed out'); process.exit(1); }, 120000);

const received = [];
const upstream = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    received.push({ method: req.method, url: req.url, headers: req.headers, body });
    const json = body ? JSON.parse(body) : {};
    const message = { id: 'msg_1', type: 'message', role: 'assistant', model: json.model,
      content: [{ type: 'text', text: 'Hello from upstream' }], stop_reason: 'end_turn', stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 4 } };
    if (!json.stream) {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_up' });
      res.end(JSON.stringify(message));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const e of [
      { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 0 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello from ' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'upstream' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 4 } },
      { type: 'message_stop' },
    ]) res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
    res.end();
  });
});

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(workDir, { recursive: true });
  const config = path.join(workDir, 'c.yaml');
  fs.writeFileSync(config, [
    'version: 1', 'budget: {unit: chars, limit: 50000, target: 40000}', 'archive: {dir: archive}',
    `plugin_dirs: ["${pluginDir}"]`, 'pipeline:',
    '  - stage: micro', '    when: over_budget', '    params: {keep_recent: 3, min_chars: 120}',
    '  - stage: summarize', '    when: over_budget', '    params: {max_chars: 1000}', ''].join('\n'));
  const upstreamPort = await listen(upstream);
  const { child, port } = await startServe(cli, config, workDir, { upstream: `http://127.0.0.1:${upstreamPort}` });
  const messages = JSON.parse(fs.readFileSync(sessionFile, 'utf8'));
  const sentChars = JSON.stringify(messages).length;
  try {
    const anthropic = new Anthropic({ apiKey: 'sk-ant-sdk-test', baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 });
    const { data, response } = await anthropic.messages
      .create({ model: 'claude-sonnet-4-5', max_tokens: 64, system: 'You are a coding agent.', messages })
      .withResponse();
    assert.equal(data.content[0].text, 'Hello from upstream');
    assert.equal(response.headers.get('x-compactor-status'), 'compacted');
    assert.equal(response.headers.get('request-id'), 'req_up');
    let last = received.at(-1);
    assert.equal(last.headers['x-api-key'], 'sk-ant-sdk-test');
    assert.ok(JSON.parse(last.body).messages, 'the upstream got messages');
    assert.ok(JSON.stringify(JSON.parse(last.body).messages).length < sentChars / 2, 'compacted before forwarding');
    checkAll(cli, workDir, [last.body]);

    const stream = anthropic.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages });
    const deltas = [];
    stream.on('text', (t) => deltas.push(t));
    const final = await stream.finalMessage();
    assert.deepEqual(deltas, ['Hello from ', 'upstream']);
    assert.equal(final.content[0].text, 'Hello from upstream');
    last = received.at(-1);
    assert.equal(JSON.parse(last.body).stream, true);
    console.log(`anthropic_sdk: ok (${received.length} upstream requests)`);
  } finally {
    child.kill('SIGTERM');
    upstream.close();
    clearTimeout(deadline);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
