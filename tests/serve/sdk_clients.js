// The official SDKs (@anthropic-ai/sdk, openai; pinned by package-lock.json) driving
// `compactor serve`, non-streaming and streaming, against a fake upstream this script starts on
// 127.0.0.1 (a free port) and which records what it received. Nothing leaves the machine.
//
// usage: node sdk_clients.js COMPACTOR_CLI PLUGIN_DIR SESSION.json WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const Anthropic = require('@anthropic-ai/sdk');
const OpenAI = require('openai');

const [cli, pluginDir, sessionFile, workDir] = process.argv.slice(2);
const deadline = setTimeout(() => { console.error('sdk_clients: timed out'); process.exit(1); }, 120000);

// ---- the fake upstream ----------------------------------------------------------------------
const received = [];
function sse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const e of events) res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
  res.end();
}
const upstream = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    received.push({ method: req.method, url: req.url, headers: req.headers, body });
    const json = body ? JSON.parse(body) : {};
    if (req.url.startsWith('/v1/messages')) {
      const message = { id: 'msg_1', type: 'message', role: 'assistant', model: json.model,
        content: [{ type: 'text', text: 'Hello from upstream' }], stop_reason: 'end_turn', stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 4 } };
      if (!json.stream) {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_up' });
        res.end(JSON.stringify(message));
        return;
      }
      sse(res, [
        { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 0 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello from ' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'upstream' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 4 } },
        { type: 'message_stop' },
      ]);
      return;
    }
    if (req.url.startsWith('/v1/chat/completions')) {
      const base = { id: 'chatcmpl-1', created: 1, model: json.model };
      if (!json.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ...base, object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: 'Hi from upstream' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const text of ['Hi from ', 'upstream'])
        res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text }, finish_reason: null }] })}\n\n`);
      res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
      res.end('data: [DONE]\n\n');
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":"not scripted"}');
  });
});

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
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
  const { child, port } = await startServe(config, upstreamPort);
  const messages = JSON.parse(fs.readFileSync(sessionFile, 'utf8'));
  const sentChars = JSON.stringify(messages).length;

  try {
    // ---- Anthropic SDK ----
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
    fs.writeFileSync(path.join(workDir, 'forwarded.json'), last.body);
    execFileSync(cli, ['check', '--input', path.join(workDir, 'forwarded.json')], { stdio: ['ignore', 'ignore', 'inherit'] });

    const stream = anthropic.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages });
    const deltas = [];
    stream.on('text', (t) => deltas.push(t));
    const final = await stream.finalMessage();
    assert.deepEqual(deltas, ['Hello from ', 'upstream']);
    assert.equal(final.content[0].text, 'Hello from upstream');
    last = received.at(-1);
    assert.equal(JSON.parse(last.body).stream, true);

    // ---- OpenAI SDK (through the OpenAI importer and exporter) ----
    const history = JSON.parse(execFileSync(cli, ['import', '--input', sessionFile, '--output-format', 'openai', '--output', '-'],
      { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
    const newest = history.at(-1);
    newest.content = [{ type: 'text', text: newest.content }];
    const openai = new OpenAI({ apiKey: 'sk-openai-sdk-test', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    const chat = await openai.chat.completions.create({ model: 'gpt-4o', messages: history }).withResponse();
    assert.equal(chat.data.choices[0].message.content, 'Hi from upstream');
    assert.equal(chat.response.headers.get('x-compactor-status'), 'compacted');
    last = received.at(-1);
    assert.equal(last.url, '/v1/chat/completions');
    assert.equal(last.headers.authorization, 'Bearer sk-openai-sdk-test');
    const forwarded = JSON.parse(last.body);
    assert.equal(forwarded.model, 'gpt-4o');
    assert.ok(JSON.stringify(forwarded.messages).length < JSON.stringify(history).length / 2, 'compacted before forwarding');
    for (const m of forwarded.messages) assert.ok(['system', 'user', 'assistant', 'tool'].includes(m.role), m.role);
    // Untouched messages (the protected newest exchange) go out as the client's own messages.
    // (The newest message is sent with its content as text parts, which the exporter would
    // have written as a string: it must come back as the client wrote it.)
    assert.ok(Array.isArray(forwarded.messages.at(-1).content));
    assert.deepEqual(forwarded.messages.at(-1), history.at(-1));
    assert.deepEqual(forwarded.messages.at(-2), history.at(-2));

    const chunks = [];
    const chatStream = await openai.chat.completions.create({ model: 'gpt-4o', messages: history, stream: true });
    for await (const chunk of chatStream) if (chunk.choices[0].delta.content) chunks.push(chunk.choices[0].delta.content);
    assert.deepEqual(chunks, ['Hi from ', 'upstream']);
    assert.equal(JSON.parse(received.at(-1).body).stream, true);
    console.log(`sdk_clients: ok (${received.length} upstream requests)`);
  } finally {
    child.kill('SIGTERM');
    upstream.close();
    clearTimeout(deadline);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
