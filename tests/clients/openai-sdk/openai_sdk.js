// The official OpenAI SDK (openai, pinned by package-lock.json here) driving `compactor serve`'s
// Chat Completions route, non-streaming and streaming, against a fake upstream this script starts
// on 127.0.0.1 (a free port) and which records what it received. Nothing leaves the machine.
//
// usage: node openai_sdk.js COMPACTOR_CLI PLUGIN_DIR SESSION.json WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const OpenAI = require('openai');
const { listen, startServe } = require('../lib/harness.js');

const [cli, pluginDir, sessionFile, workDir] = process.argv.slice(2);
const deadline = setTimeout(() => { console.error('openai_sdk: timed out'); process.exit(1); }, 120000);

const received = [];
const upstream = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    received.push({ method: req.method, url: req.url, headers: req.headers, body });
    const json = body ? JSON.parse(body) : {};
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
  try {
    // A real session as an OpenAI history (the importer's export), the newest message's content
    // as text parts.
    const history = JSON.parse(execFileSync(cli, ['import', '--input', sessionFile, '--output-format', 'openai', '--output', '-'],
      { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
    const newest = history.at(-1);
    newest.content = [{ type: 'text', text: newest.content }];
    const openai = new OpenAI({ apiKey: 'sk-openai-sdk-test', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    const chat = await openai.chat.completions.create({ model: 'gpt-4o', messages: history }).withResponse();
    assert.equal(chat.data.choices[0].message.content, 'Hi from upstream');
    assert.equal(chat.response.headers.get('x-compactor-status'), 'compacted');
    const last = received.at(-1);
    assert.equal(last.url, '/v1/chat/completions');
    assert.equal(last.headers.authorization, 'Bearer sk-openai-sdk-test');
    const forwarded = JSON.parse(last.body);
    assert.equal(forwarded.model, 'gpt-4o');
    assert.ok(JSON.stringify(forwarded.messages).length < JSON.stringify(history).length / 2, 'compacted before forwarding');
    for (const m of forwarded.messages) assert.ok(['system', 'user', 'assistant', 'tool'].includes(m.role), m.role);
    // Untouched messages (the protected newest exchange) go out as the client's own messages:
    // the newest is sent with its content as text parts, which the exporter would have written
    // as a string; it must come back as the client wrote it.
    assert.ok(Array.isArray(forwarded.messages.at(-1).content));
    assert.deepEqual(forwarded.messages.at(-1), history.at(-1));
    assert.deepEqual(forwarded.messages.at(-2), history.at(-2));

    const chunks = [];
    const chatStream = await openai.chat.completions.create({ model: 'gpt-4o', messages: history, stream: true });
    for await (const chunk of chatStream) if (chunk.choices[0].delta.content) chunks.push(chunk.choices[0].delta.content);
    assert.deepEqual(chunks, ['Hi from ', 'upstream']);
    assert.equal(JSON.parse(received.at(-1).body).stream, true);
    console.log(`openai_sdk: ok (${received.length} upstream requests)`);
  } finally {
    child.kill('SIGTERM');
    upstream.close();
    clearTimeout(deadline);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
