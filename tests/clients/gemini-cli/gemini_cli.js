// Gemini CLI itself (npm @google/gemini-cli, pinned by package-lock.json here; runs on Node 20)
// runs a multi-turn tool task through `compactor serve`: 30 read_file calls of 30 KB files,
// answered by a scripted Gemini API this script starts on 127.0.0.1 (tests/clients/lib/
// gemini_upstream.js: SSE for streamGenerateContent, a thoughtSignature on every step's call,
// a quarter of the bytes received reported as prompt tokens). The budget (200,000 chars, system
// instruction and tools counted) is far below the 900 KB the files come to, so the calls past it
// are compacted.
//
// Compactor's `mcp` server is one of Gemini CLI's tool servers (`mcpServers` in its
// settings.json, the tool `mcp_compactor_restore`): once every file is read, the scripted model
// takes the receipt of a result Compactor masked from the history it was sent and restores it
// through Gemini CLI, and the restored text must be that file's.
//
// What must hold: Gemini CLI finishes; every forwarded body meets the Gemini API's rules as an
// independent checker reads them (tests/clients/lib/gemini_rules.js, from Google's
// documentation), passes `compactor check`, and is within the budget as `compactor count`
// measures it; every thoughtSignature the upstream issued that is still in a forwarded history
// is there byte-identical, on the very call it was issued for; calls past the limit were
// compacted; the router's calls went through untouched. Gemini CLI masks old tool outputs
// itself (`<tool_output_masked>`) once its history grows; such a history is a continuity miss
// for serve (a full run), never a refusal.
//
// usage: node gemini_cli.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { listen, closedPort, startServe, run, checkAll, writeFiles } = require('../lib/harness.js');
const { geminiUpstream } = require('../lib/gemini_upstream.js');
const { geminiViolations, isCall, isResponse, call, response, signature } = require('../lib/gemini_rules.js');

const [cli, pluginDir, workDir] = process.argv.slice(2);
const gemini = path.join(__dirname, 'node_modules', '.bin', 'gemini');
const READS = 30;
const LIMIT = 200000;  // chars, system instruction and tools included
const deadline = setTimeout(() => { console.error('gemini_cli: timed out'); process.exit(1); }, 560000);

// Every string inside a JSON value.
const strings = (v) => (typeof v === 'string' ? [v] : v && typeof v === 'object' ? Object.values(v).flatMap(strings) : []);

function script(files, state) {
  return (json) => {
    const declared = json.tools.flatMap((t) => t.functionDeclarations || []).map((d) => d.name);
    const contents = json.contents;
    const last = contents[contents.length - 1];
    // The restore's answer came back: remember what it held.
    const restored = last.parts.filter(isResponse).map(response).find((r) => r.name === 'mcp_compactor_restore');
    if (restored) state.restoredText = strings(restored.response).join('\n');
    if (state.reads < READS) {
      state.reads += 1;
      return [{ text: `Reading file ${state.reads}.` }, { functionCall: { name: 'read_file', args: { file_path: files[state.reads - 1] } } }];
    }
    if (!state.restoreAsked && declared.includes('mcp_compactor_restore')) {
      // A whole file's result Compactor masked in the history this call was sent (its marker
      // gives the size; a smaller one is an output Gemini CLI had masked itself before): its
      // receipt and its file.
      const whole = /\[compactor archived result[^\]]*?, (\d+) chars: (sha256:[0-9a-f]{64})/;
      for (let i = 1; i < contents.length; i++) {
        const r = contents[i].parts.filter(isResponse).map(response).find((x) => x.name === 'read_file' &&
          Number((JSON.stringify(x.response).match(whole) || [0, 0])[1]) >= 25000);
        if (!r) continue;
        const asked = contents[i - 1].parts.filter(isCall).map(call).find((c) => c.name === 'read_file');
        if (!asked) continue;
        state.restoreAsked = { receipt: JSON.stringify(r.response).match(whole)[2], file: asked.args.file_path };
        // A page small enough that Gemini CLI does not mask the answer itself.
        return [{ text: 'Restoring an archived result.' },
          { functionCall: { name: 'mcp_compactor_restore', args: { receipt: state.restoreAsked.receipt, max_chars: 3000 } } }];
      }
    }
    return [{ text: `All ${READS} files read.` }];
  };
}

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  const home = path.join(workDir, 'home');
  fs.mkdirSync(path.join(home, '.gemini'), { recursive: true });
  const project = path.join(workDir, 'project');
  const files = writeFiles(path.join(project, 'files'), READS, 30000);
  const archive = path.join(workDir, 'archive');
  fs.writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify({
    security: { auth: { selectedType: 'gemini-api-key' } },
    privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false }, general: { enableAutoUpdate: false },
    // Gemini CLI gives an MCP server the variables its `env` names: the key, whose tenant serve archived for.
    mcpServers: { compactor: { command: cli, args: ['mcp', '--archive', archive, '--tenant-key-env', 'GEMINI_API_KEY'],
                               env: { GEMINI_API_KEY: '$GEMINI_API_KEY' }, trust: true } },
  }));
  const config = path.join(workDir, 'c.yaml');
  fs.writeFileSync(config, [
    'version: 1', `budget: {unit: chars, limit: ${LIMIT}, target: 175000}`, `archive: {dir: "${archive}"}`,
    `plugin_dirs: ["${pluginDir}"]`, 'pipeline:',
    '  - stage: micro', '    when: over_budget', '    params: {keep_recent: 3, min_chars: 120}',
    '  - stage: summarize', '    when: over_budget', '    params: {max_chars: 1000}', ''].join('\n'));

  const state = { reads: 0, restoreAsked: null, restoredText: null };
  const upstream = geminiUpstream(script(files, state));
  const upstreamPort = await listen(upstream.server);
  const deadProxy = `http://127.0.0.1:${await closedPort()}`;
  const { child, port } = await startServe(cli, config, workDir, { upstream: deadProxy, geminiUpstream: `http://127.0.0.1:${upstreamPort}` });
  try {
    const env = {
      PATH: process.env.PATH, HOME: home, GEMINI_API_KEY: 'gemini-cli-test-key', GEMINI_CLI_NO_RELAUNCH: 'true',
      GOOGLE_GEMINI_BASE_URL: `http://127.0.0.1:${port}`,
      HTTPS_PROXY: deadProxy, HTTP_PROXY: deadProxy, NO_PROXY: '127.0.0.1,localhost',
    };
    const r = await run(gemini, ['--skip-trust', '--approval-mode', 'yolo', '--output-format', 'json', '-p',
      `Read the ${READS} files in ${path.join(project, 'files')} one by one, then say so.`], { cwd: project, env });
    assert.equal(r.code, 0, `gemini exited ${r.code}: ${r.out.slice(-2000)} ${r.err.slice(-4000)}`);
    assert.match(JSON.parse(r.out).response, new RegExp(`All ${READS} files read\\.`));
    assert.equal(state.reads, READS);

    // The restore through the MCP tool gave back the masked file's text.
    assert.ok(state.restoreAsked, 'no masked result was found to restore');
    assert.ok(state.restoredText, 'the restore call never came back');
    const wanted = fs.readFileSync(state.restoreAsked.file, 'utf8');
    assert.ok(state.restoredText.includes(wanted.slice(0, 2500)),
      `the restore did not give back ${state.restoreAsked.file}: ${state.restoredText.slice(0, 300)}`);

    const calls = upstream.received.filter((q) => /:(generateContent|streamGenerateContent)/.test(q.url));
    const bodies = calls.map((q) => JSON.parse(q.body));
    const agent = bodies.filter((b) => (b.tools || []).some((t) => (t.functionDeclarations || []).length) &&
      !(b.generationConfig || {}).responseJsonSchema && !(b.generationConfig || {}).responseSchema);
    assert.ok(agent.length >= READS + 2, `${agent.length} agent calls`);
    assert.ok(upstream.routerCalls > 0, 'no router call was seen');
    assert.ok(calls.some((q) => q.url.includes(':streamGenerateContent?alt=sse')), 'no streamed call');

    // Every forwarded agent body: the API's rules (read independently), Compactor's check, the budget.
    agent.forEach((b, i) => assert.deepEqual(geminiViolations(b), [], `forwarded body ${i}`));
    checkAll(cli, workDir, agent, 'gemini');
    let largest = 0;
    agent.forEach((b, i) => {
      const counted = execFileSync(cli, ['count', '--input', path.join(workDir, `forwarded-${i}.json`), '--meter', 'chars4']).toString();
      const chars = Number((counted.match(/(\d+) chars/) || [])[1]);  // system instruction and tools included
      largest = Math.max(largest, chars);
      assert.ok(chars <= LIMIT, `forwarded body ${i} is ${chars} chars, over the ${LIMIT} budget: ${counted}`);
    });

    // Signatures: each issued one still in a history is there byte-identical, on its own call.
    let seen = 0;
    for (const b of agent)
      for (const c of b.contents)
        for (const p of c.parts) {
          if (!isCall(p)) continue;
          const issued = [...upstream.issued.entries()].find(([, fc]) => fc.name === call(p).name && JSON.stringify(fc.args) === JSON.stringify(call(p).args));
          assert.ok(issued, `a call the upstream never made: ${JSON.stringify(call(p))}`);
          assert.equal(signature(p), issued[0], `the signature of ${JSON.stringify(call(p).args)} changed or went missing`);
          seen += 1;
        }
    assert.ok(seen > READS, `${seen} signed calls seen`);

    // Compacted: a response or a turn that is a Compactor marker (the MCP server's instructions
    // in the session context name the markers too).
    const marker = (p) => (typeof p.text === 'string' && p.text.startsWith('[compactor')) ||
      (isResponse(p) && strings(response(p).response).some((t) => t.startsWith('[compactor')));
    const compacted = agent.filter((b) => b.contents.some((c) => c.parts.some(marker)));
    assert.ok(compacted.length > 0, 'no forwarded request was compacted');
    const first = agent.findIndex((b) => b.contents.some((c) => c.parts.some(marker)));
    assert.ok(agent.slice(first).every((b) => b.contents.some((c) => c.parts.some(marker))), 'a call past the limit went out uncompacted');
    // Gemini CLI masked old outputs itself (what Compactor archived of them says so): its history
    // changed under serve, which continues such a call from the longest prefix it still knows
    // (a shorter one, or none: a full run), never refusing it.
    const maskedByClient = fs.readdirSync(archive, { recursive: true }).filter((f) => {
      const full = path.join(archive, f);
      return fs.statSync(full).isFile() && fs.readFileSync(full).includes('<tool_output_masked>');
    }).length;
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.doesNotMatch(metrics, /route="gemini",outcome="(refused|failed)"/, metrics);
    const continuity = (result) => Number((metrics.match(new RegExp(`compactor_serve_state_total\\{result="${result}"\\} (\\d+)`)) || [0, 0])[1]);
    console.log(`gemini_cli: ok (${agent.length} agent calls, ${compacted.length} compacted from call ${first + 1} on; ` +
      `${maskedByClient} outputs masked by Gemini CLI itself, continuity ${continuity('hit')} hits and ${continuity('miss')} misses; ` +
      `${upstream.routerCalls} router calls passed; the largest forwarded body ${largest} chars of ${LIMIT}; ${seen} signed calls checked; ` +
      `restored ${path.basename(state.restoreAsked.file)} through mcp_compactor_restore)`);
  } finally {
    upstream.received.forEach((q, i) => fs.writeFileSync(path.join(workDir, `received-${i}.json`), JSON.stringify(q)));
    child.kill('SIGTERM');
    upstream.server.close();
    clearTimeout(deadline);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
