// The official OpenAI SDK as an agent loop with a tool, through `compactor serve`'s Chat
// Completions route, non-streaming and then streaming: the script keeps the history as an agent
// does (the assistant message as the SDK returned it, reasoning_content included, and each tool
// message with its name), 12 calls of 3 KB reads under a budget that forces compaction. Asserted:
// some calls compacted, every forwarded body meets the Chat rules (tests/clients/lib, written
// from the API reference) and `compactor check`, and the fields the client sent (the reasoning,
// the tool messages' names) are intact wherever their message is still in the history.
//
// usage: node openai_agent.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const OpenAI = require('openai');
const { listen, startServe, checkAll } = require('../lib/harness.js');
const { chatUpstream, chatRuleViolations } = require('../lib/chat_upstream.js');

const [cli, pluginDir, workDir] = process.argv.slice(2);
const TURNS = 12;
const deadline = setTimeout(() => { console.error('openai_agent: timed out'); process.exit(1); }, 120000);
const fileText = (n) => Array.from({ length: 40 }, (_, l) => `file ${n} line ${l}: ${'the quick brown fox '.repeat(3)}`).join('\n');
const tools = [{ type: 'function', function: { name: 'read_file', description: 'Reads a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } } }];

async function loop(openai, stream) {
  const messages = [{ role: 'system', content: 'You are a coding agent.' }, { role: 'user', content: 'Read the files one by one.' }];
  const statuses = [];
  for (;;) {
    let message;
    if (!stream) {
      const { data, response } = await openai.chat.completions.create({ model: 'deepseek-reasoner', messages, tools }).withResponse();
      statuses.push(response.headers.get('x-compactor-status'));
      message = data.choices[0].message;
    } else {
      const { data, response } = await openai.chat.completions.create({ model: 'deepseek-reasoner', messages, tools, stream: true }).withResponse();
      statuses.push(response.headers.get('x-compactor-status'));
      message = { role: 'assistant', content: null, reasoning_content: '' };
      const calls = [];
      for await (const chunk of data) {
        const d = chunk.choices[0] && chunk.choices[0].delta;
        if (!d) continue;
        if (d.reasoning_content) message.reasoning_content += d.reasoning_content;
        if (d.content) message.content = (message.content || '') + d.content;
        for (const c of d.tool_calls || []) {
          calls[c.index] = calls[c.index] || { id: c.id, type: 'function', function: { name: '', arguments: '' } };
          if (c.function && c.function.name) calls[c.index].function.name += c.function.name;
          if (c.function && c.function.arguments) calls[c.index].function.arguments += c.function.arguments;
        }
      }
      if (calls.length) message.tool_calls = calls;
    }
    messages.push(message);
    if (!message.tool_calls) return statuses;
    for (const call of message.tool_calls) {
      const n = Number(JSON.parse(call.function.arguments).path.match(/f(\d+)/)[1]);
      messages.push({ role: 'tool', tool_call_id: call.id, name: 'read_file', content: fileText(n) });
    }
  }
}

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(workDir, { recursive: true });
  // Each loop its own folder (config, archive, state): the second would otherwise continue the
  // first's stored histories, and its calls forward those compactions without compacting anew.
  const configIn = (dir) => {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'c.yaml'), configText);
    return path.join(dir, 'c.yaml');
  };
  const configText = [
    'version: 1', 'budget: {unit: chars, limit: 20000, target: 16000}', 'archive: {dir: archive}',
    `plugin_dirs: ["${pluginDir}"]`, 'pipeline:',
    '  - stage: micro', '    when: over_budget', '    params: {keep_recent: 2, min_chars: 120}',
    '  - stage: summarize', '    when: over_budget', '    params: {max_chars: 1000}', ''].join('\n');
  for (const stream of [false, true]) {
    const loopDir = path.join(workDir, stream ? 'streaming' : 'plain');
    const config = configIn(loopDir);
    const upstream = chatUpstream({ turns: TURNS });
    const upstreamPort = await listen(upstream.server);
    const { child, port } = await startServe(cli, config, loopDir, { upstream: `http://127.0.0.1:${upstreamPort}` });
    try {
      const openai = new OpenAI({ apiKey: 'sk-openai-agent-test', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
      const statuses = await loop(openai, stream);
      assert.equal(upstream.calls, TURNS);
      assert.ok(statuses.includes('compacted'), `no call compacted (${statuses.join(' ')})`);
      assert.ok(!statuses.includes('refused') && !statuses.includes('failed'), statuses.join(' '));
      upstream.received.forEach((b, i) => {
        assert.deepEqual(chatRuleViolations(b.messages), [], `${stream ? 'streaming' : 'plain'} body ${i}`);
        for (const m of b.messages) {
          if (m.role === 'assistant' && m.tool_calls) assert.equal(m.reasoning_content, upstream.issued[m.tool_calls[0].id]);
          if (m.role === 'tool') assert.equal(m.name, 'read_file');
        }
      });
      checkAll(cli, loopDir, upstream.received, 'openai');
      console.log(`openai_agent (${stream ? 'streaming' : 'not streaming'}): ok (${statuses.filter((s) => s === 'compacted').length} of ${statuses.length} calls compacted)`);
    } finally {
      child.kill('SIGTERM');
      upstream.server.close();
    }
  }
  clearTimeout(deadline);
}

main().catch((e) => { console.error(e); process.exit(1); });
