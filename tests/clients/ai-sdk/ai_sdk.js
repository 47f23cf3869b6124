// The AI SDK (ai with @ai-sdk/openai-compatible, pinned by package-lock.json here) as an agent
// loop with a tool, through `compactor serve`'s Chat Completions route: generateText and then
// streamText, each for 12 steps of 3 KB reads under a budget that forces compaction. Each loop
// runs twice against the same scripted upstream: straight to it, and through serve. The SDK
// keeps its own history, the same in both runs, so every assistant message that reaches the
// upstream through serve must be, field for field, the one the direct run sent at that call:
// what the client carried (its reasoning, its provider fields) is intact. Also asserted: calls
// compacted, every forwarded body meets the Chat rules (tests/clients/lib, written from the API
// reference) and `compactor check`.
//
// usage: node ai_sdk.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { generateText, streamText, tool, stepCountIs } = require('ai');
const { createOpenAICompatible } = require('@ai-sdk/openai-compatible');
const { z } = require('zod');
const { listen, startServe, checkAll } = require('../lib/harness.js');
const { chatUpstream, chatRuleViolations } = require('../lib/chat_upstream.js');

const [cli, pluginDir, workDir] = process.argv.slice(2);
const STEPS = 12;
const deadline = setTimeout(() => { console.error('ai_sdk: timed out'); process.exit(1); }, 180000);
const fileText = (p) => Array.from({ length: 40 }, (_, l) => `${p} line ${l}: ${'the quick brown fox '.repeat(3)}`).join('\n');

async function agent(baseURL, stream) {
  const provider = createOpenAICompatible({ name: 'local', baseURL, apiKey: 'sk-ai-sdk-test' });
  const options = {
    model: provider.chatModel('deepseek-reasoner'),
    system: 'You are a coding agent.',
    prompt: 'Read the files one by one.',
    tools: { read_file: tool({ description: 'Reads a file', inputSchema: z.object({ path: z.string() }), execute: async ({ path: p }) => fileText(p) }) },
    stopWhen: stepCountIs(STEPS + 1),
    maxRetries: 0,
  };
  if (!stream) return (await generateText(options)).text;
  const result = streamText(options);
  let text = '';
  for await (const part of result.textStream) text += part;
  return text;
}

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(workDir, { recursive: true });
  const config = path.join(workDir, 'c.yaml');
  fs.writeFileSync(config, [
    'version: 1', 'budget: {unit: chars, limit: 20000, target: 16000}', 'archive: {dir: archive}',
    `plugin_dirs: ["${pluginDir}"]`, 'pipeline:',
    '  - stage: micro', '    when: over_budget', '    params: {keep_recent: 2, min_chars: 120}',
    '  - stage: summarize', '    when: over_budget', '    params: {max_chars: 1000}', ''].join('\n'));
  for (const stream of [false, true]) {
    const label = stream ? 'streamText' : 'generateText';
    const direct = chatUpstream({ turns: STEPS });
    const directPort = await listen(direct.server);
    const directText = await agent(`http://127.0.0.1:${directPort}/v1`, stream);
    direct.server.close();

    const upstream = chatUpstream({ turns: STEPS });
    const upstreamPort = await listen(upstream.server);
    const { child, port } = await startServe(cli, config, workDir, { upstream: `http://127.0.0.1:${upstreamPort}` });
    try {
      const text = await agent(`http://127.0.0.1:${port}/v1`, stream);
      assert.equal(text, directText);
      assert.equal(upstream.received.length, direct.received.length);
      let compacted = 0;
      upstream.received.forEach((b, i) => {
        assert.deepEqual(chatRuleViolations(b.messages), [], `${label} body ${i}`);
        const sent = direct.received[i].messages.map((m) => JSON.stringify(m));
        if (JSON.stringify(b.messages) !== JSON.stringify(direct.received[i].messages)) compacted += 1;
        for (const m of b.messages)
          if (m.role === 'assistant') assert.ok(sent.includes(JSON.stringify(m)), `${label} body ${i}: an assistant message the client did not send: ${JSON.stringify(m).slice(0, 300)}`);
      });
      assert.ok(compacted > 0, `${label}: no call compacted`);
      checkAll(cli, workDir, upstream.received, 'openai');
      console.log(`ai_sdk (${label}): ok (${compacted} of ${upstream.received.length} calls compacted)`);
    } finally {
      child.kill('SIGTERM');
      upstream.server.close();
    }
  }
  clearTimeout(deadline);
}

main().catch((e) => { console.error(e); process.exit(1); });
