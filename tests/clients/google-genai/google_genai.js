// The official Google Gen AI SDK (npm @google/genai, pinned by package-lock.json here; the newest
// release that runs on Node 20) as an agent loop with function calling through `compactor serve`,
// once with generateContent and once with generateContentStream (SSE), against a scripted Gemini
// API on 127.0.0.1 (tests/clients/lib/gemini_upstream.js). Each step the model asks for two files
// at once (parallel calls, as the API returns them: without ids, only the first signed); the loop
// appends the model's content as the SDK gives it (signatures included) and one
// functionResponse per call, by name, as Google's function-calling guide does. The budget is far
// below what the files come to, so the calls past it are compacted.
//
// What must hold: both loops finish with the model's final answer; every forwarded body meets
// the Gemini API's rules read independently (tests/clients/lib/gemini_rules.js), passes
// `compactor check` and is within the budget; the parts Compactor pairs by name and order go out
// without an id the SDK never sent; every thoughtSignature the upstream issued that is still in
// a forwarded history is there byte-identical, on its call.
//
// usage: node google_genai.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { GoogleGenAI } = require('@google/genai');
const { listen, closedPort, startServe, checkAll, writeFiles } = require('../lib/harness.js');
const { geminiUpstream } = require('../lib/gemini_upstream.js');
const { geminiViolations, isCall, isResponse, call, response, signature } = require('../lib/gemini_rules.js');

const [cli, pluginDir, workDir] = process.argv.slice(2);
const STEPS = 12;  // two files each
const LIMIT = 60000;
const deadline = setTimeout(() => { console.error('google_genai: timed out'); process.exit(1); }, 300000);

const readFile = { name: 'read_file', description: 'Reads a file', parametersJsonSchema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] } };

async function agentLoop(ai, files, stream) {
  const contents = [{ role: 'user', parts: [{ text: `Read the ${files.length} files two at a time, then say so.` }] }];
  const config = { tools: [{ functionDeclarations: [readFile] }], thinkingConfig: { includeThoughts: true } };
  for (let turn = 0; turn < STEPS + 2; turn++) {
    let parts;
    if (stream) {
      parts = [];
      for await (const chunk of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents, config }))
        parts.push(...((chunk.candidates?.[0]?.content?.parts) || []));
    } else {
      const r = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents, config });
      parts = r.candidates[0].content.parts;
    }
    const kept = parts.filter((p) => !p.thought);  // the model's thoughts are not sent back
    contents.push({ role: 'model', parts: kept });
    const calls = kept.filter((p) => p.functionCall).map((p) => p.functionCall);
    if (!calls.length) return kept.map((p) => p.text || '').join('');
    contents.push({ role: 'user', parts: calls.map((c) => ({ functionResponse: { name: c.name, response: { output: fs.readFileSync(c.args.file_path, 'utf8') } } })) });
  }
  throw new Error('the loop did not end');
}

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(workDir, { recursive: true });
  const files = writeFiles(path.join(workDir, 'files'), 2 * STEPS, 8000);
  const config = path.join(workDir, 'c.yaml');
  fs.writeFileSync(config, [
    'version: 1', `budget: {unit: chars, limit: ${LIMIT}, target: 48000}`, 'archive: {dir: archive}',
    `plugin_dirs: ["${pluginDir}"]`, 'pipeline:',
    '  - stage: micro', '    when: over_budget', '    params: {keep_recent: 2, min_chars: 120}',
    '  - stage: summarize', '    when: over_budget', '    params: {max_chars: 1000}', ''].join('\n'));

  const progress = { step: 0 };  // of the loop running
  const upstream = geminiUpstream(() => {
    const step = progress.step;
    if (step >= STEPS) return [{ text: `All ${2 * STEPS} files read.` }];
    progress.step += 1;
    return [{ text: `Reading files ${2 * step + 1} and ${2 * step + 2}.` },
      { functionCall: { name: 'read_file', args: { file_path: files[2 * step] } } },
      { functionCall: { name: 'read_file', args: { file_path: files[2 * step + 1] } } }];
  });
  const upstreamPort = await listen(upstream.server);
  const deadProxy = `http://127.0.0.1:${await closedPort()}`;
  const { child, port } = await startServe(cli, config, workDir, { upstream: deadProxy, geminiUpstream: `http://127.0.0.1:${upstreamPort}` });
  try {
    const ai = new GoogleGenAI({ apiKey: 'google-genai-test-key', httpOptions: { baseUrl: `http://127.0.0.1:${port}` } });
    for (const stream of [false, true]) {
      progress.step = 0;
      const before = upstream.received.length;
      const answer = await agentLoop(ai, files, stream);
      assert.equal(answer, `All ${2 * STEPS} files read.`);
      const received = upstream.received.slice(before);
      assert.equal(received.length, STEPS + 1);
      assert.ok(received.every((q) => q.url.includes(stream ? ':streamGenerateContent?alt=sse' : ':generateContent')), received[0].url);
      assert.equal(received[0].headers['x-goog-api-key'], 'google-genai-test-key');
      const bodies = received.map((q) => JSON.parse(q.body));
      bodies.forEach((b, i) => assert.deepEqual(geminiViolations(b), [], `${stream ? 'streamed' : 'plain'} body ${i}`));
      const dir = path.join(workDir, stream ? 'streamed' : 'plain');
      fs.mkdirSync(dir, { recursive: true });
      checkAll(cli, dir, bodies, 'gemini');
      bodies.forEach((b, i) => {
        const counted = execFileSync(cli, ['count', '--input', path.join(dir, `forwarded-${i}.json`), '--meter', 'chars4']).toString();
        const chars = Number((counted.match(/(\d+) chars/) || [])[1]);
        assert.ok(chars <= LIMIT, `body ${i} is ${chars} chars, over the ${LIMIT} budget: ${counted}`);
      });
      const compacted = bodies.filter((b) => b.contents.some((c) => c.parts.some((p) => isResponse(p) &&
        String(response(p).response.output).startsWith('[compactor'))));
      assert.ok(compacted.length > 0, 'no forwarded request was compacted');
      for (const b of bodies)
        for (const c of b.contents)
          for (const p of c.parts) {
            if (isCall(p)) assert.equal(call(p).id, undefined, 'a call went out with an id the SDK never sent');
            if (isResponse(p)) assert.equal(response(p).id, undefined, 'a response went out with an id the SDK never sent');
            if (!isCall(p) || !signature(p)) continue;
            const issued = upstream.issued.get(signature(p));
            assert.ok(issued, `a signature the upstream never issued: ${signature(p)}`);
            assert.deepEqual(issued.args, call(p).args, 'a signature moved to another call');
          }
      // Each step's first call, where still in the history, carries its signature.
      const last = bodies[bodies.length - 1];
      const signedSteps = last.contents.filter((c) => c.role === 'model' && c.parts.some(isCall));
      assert.ok(signedSteps.every((c) => signature(c.parts.find(isCall))), 'a kept step lost its signature');
      console.log(`google_genai: ${stream ? 'generateContentStream' : 'generateContent'} ok (${bodies.length} calls, ${compacted.length} compacted, ` +
        `the last ${JSON.stringify(last).length} bytes with ${signedSteps.length} signed steps kept)`);
    }
  } finally {
    child.kill('SIGTERM');
    upstream.server.close();
    clearTimeout(deadline);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
