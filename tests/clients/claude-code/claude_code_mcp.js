// Claude Code itself gets back what `compactor serve` archived, through the `compactor` MCP
// server, from its own folder wherever serve runs (serve runs in a folder of its own here):
//
//   1. over stdio (`--mcp-config` starting `compactor mcp --archive <absolute archive>`): micro
//      masks old Read results; the scripted upstream, as a model would, takes a receipt from a
//      marker in the history it was sent and calls mcp__compactor__restore; the next request's
//      tool_result holds the file's text as Claude Code first sent it, byte for byte;
//   2. over HTTP (`--mcp-config` naming serve's own /mcp): a failed Read's error line is
//      summarized away; the upstream takes the receipt the summary names and calls
//      mcp__compactor__search for the error; the next request's tool_result holds that line.
//
// The config says `archive.restore_via: mcp`, so the restore instruction in what the model was
// sent names the MCP server's `restore` tool (asserted in both phases), not a command line.
//
// usage: node claude_code_mcp.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { listen, closedPort, startServe, run, checkAll, writeFiles } = require('../lib/harness.js');
const { writeMessage } = require('../lib/messages_reply.js');

const [cli, pluginDir, workDir] = process.argv.slice(2).map((p) => path.resolve(p));
const claude = path.join(__dirname, 'node_modules', '.bin', 'claude');
const deadline = setTimeout(() => { console.error('claude_code_mcp: timed out'); process.exit(1); }, 560000);
const RECEIPT = /sha256:[0-9a-f]{64}/;

function textOf(content) {
  if (typeof content === 'string') return content;
  return (content || []).filter((b) => b.type === 'text').map((b) => b.text).join('');
}

// A scripted Messages API upstream: `steps` is the agent's plan, each step a function of the
// request that returns a tool_use block (or null to answer and stop).
function upstreamFor(steps) {
  const state = { received: [], step: 0 };
  const answer = (res, json, content, stopReason) => {
    const message = { id: `msg_${state.received.length}`, type: 'message', role: 'assistant', model: json.model, content,
      stop_reason: stopReason, stop_sequence: null, usage: { input_tokens: 1000, output_tokens: 20 } };
    writeMessage(res, message, json.stream);
  };
  state.server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const json = body ? JSON.parse(body) : {};
      if (!req.url.startsWith('/v1/messages') || req.url.startsWith('/v1/messages/count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"input_tokens":100}');
        return;
      }
      const agent = Array.isArray(json.tools) && json.tools.some((t) => t.name === 'Read');
      if (!agent) return answer(res, json, [{ type: 'text', text: 'ok' }], 'end_turn');
      state.received.push(json);
      const use = state.step < steps.length ? steps[state.step](json) : null;
      if (use) {
        state.step += 1;
        return answer(res, json, [{ type: 'text', text: `Step ${state.step}.` }, { type: 'tool_use', id: `toolu_${state.step}`, ...use }], 'tool_use');
      }
      answer(res, json, [{ type: 'text', text: 'Done.' }], 'end_turn');
    });
  });
  return state;
}

async function claudeCode(port, mcpConfig, deadProxy, home, agentDir) {
  const env = {
    PATH: process.env.PATH, HOME: home,
    ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_API_KEY: 'sk-ant-claude-code-test',
    DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    HTTPS_PROXY: deadProxy, HTTP_PROXY: deadProxy, NO_PROXY: '127.0.0.1,localhost',
  };
  return run(claude, ['-p', 'Read the files, then say done.', '--mcp-config', mcpConfig, '--strict-mcp-config',
    '--allowedTools', 'Read,mcp__compactor__restore,mcp__compactor__search'], { cwd: agentDir, env });
}

// The tool_result answering `id` in a request, and the first request that holds it.
function resultOf(bodies, id) {
  for (const b of bodies)
    for (const m of b.messages)
      if (m.role === 'user' && Array.isArray(m.content))
        for (const block of m.content) if (block.type === 'tool_result' && block.tool_use_id === id) return block;
  return null;
}

async function phase(name, { files, steps, pipeline, mcp }) {
  const dir = path.join(workDir, name);
  const serveDir = path.join(dir, 'serve'), agentDir = path.join(dir, 'agent'), home = path.join(dir, 'home');
  for (const d of [serveDir, agentDir, home]) fs.mkdirSync(d, { recursive: true });
  const archive = path.join(serveDir, 'archive');
  fs.writeFileSync(path.join(serveDir, 'c.yaml'), [
    'version: 1', 'budget: {unit: chars, limit: 150000, target: 120000}', `archive: {dir: ${archive}, restore_via: mcp}`,
    `plugin_dirs: ["${pluginDir}"]`, 'pipeline:', pipeline, ''].join('\n'));
  const upstream = upstreamFor(steps);
  const upstreamPort = await listen(upstream.server);
  const { child, port } = await startServe(cli, 'c.yaml', serveDir, { upstream: `http://127.0.0.1:${upstreamPort}` });
  try {
    const config = mcp === 'stdio'
      // serve has no clients configured: the archive is the tenant of the API key the agent
      // sends, which the MCP server is given the same way.
      ? { mcpServers: { compactor: { command: cli, args: ['mcp', '--archive', archive, '--tenant-key-env', 'ANTHROPIC_API_KEY'] } } }
      : { mcpServers: { compactor: { type: 'http', url: `http://127.0.0.1:${port}/mcp`, headers: { 'x-api-key': '${ANTHROPIC_API_KEY}' } } } };
    const mcpConfig = path.join(agentDir, 'mcp.json');
    fs.writeFileSync(mcpConfig, JSON.stringify(config));
    const r = await claudeCode(port, mcpConfig, `http://127.0.0.1:${await closedPort()}`, home, agentDir);
    assert.equal(r.code, 0, `claude exited ${r.code}: ${r.out} ${r.err}`);
    assert.ok(upstream.received[0].tools.some((t) => t.name === 'mcp__compactor__restore'), 'Claude Code did not load the MCP tools');
    checkAll(cli, dir, upstream.received);
    const sent = JSON.stringify(upstream.received.at(-1).messages);
    assert.ok(sent.includes('the `restore` tool of the `compactor` MCP server with the receipt sha256:'),
      `${name}: the restore instruction the model was sent does not name the MCP tool`);
    assert.ok(!sent.includes('compactor restore sha256:'), `${name}: the model was told to run the command line`);
    return upstream;
  } finally {
    child.kill('SIGTERM');
    upstream.server.close();
  }
}

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  const files = writeFiles(path.join(workDir, 'files'), 8, 30000);

  // ---- 1. a masked result restored over stdio --------------------------------------------------
  let masked = null;
  const reads = files.map((f) => () => ({ name: 'Read', input: { file_path: f } }));
  const one = await phase('stdio', {
    files, mcp: 'stdio',
    pipeline: '  - stage: micro\n    when: over_budget\n    params: {keep_recent: 2, min_chars: 120}',
    steps: [...reads, (json) => {
      for (const m of json.messages)
        if (m.role === 'user' && Array.isArray(m.content))
          for (const b of m.content)
            if (b.type === 'tool_result' && RECEIPT.test(textOf(b.content)) && textOf(b.content).startsWith('[compactor archived result')) {
              masked = { id: b.tool_use_id, receipt: RECEIPT.exec(textOf(b.content))[0] };
              return { name: 'mcp__compactor__restore', input: { receipt: masked.receipt, max_chars: 100000 } };
            }
      return null;
    }],
  });
  assert.ok(masked, 'no masked result reached the upstream');
  const original = one.received.map((b) => b.messages).flat()
    .filter((m) => m.role === 'user' && Array.isArray(m.content)).map((m) => m.content).flat()
    .find((b) => b.type === 'tool_result' && b.tool_use_id === masked.id && !RECEIPT.test(textOf(b.content)));
  const restored = resultOf(one.received, `toolu_${files.length + 1}`);
  assert.ok(original && restored, 'the original result or the restore answer is missing');
  assert.ok(textOf(restored.content).includes(textOf(original.content)),
    `the restored text is not the result Claude Code first sent: ${textOf(restored.content).slice(0, 300)}`);
  console.log(`claude_code_mcp: stdio: ${masked.receipt.slice(0, 19)}… restored, ${textOf(original.content).length} chars byte for byte`);

  // ---- 2. a summarized error line found over serve's /mcp --------------------------------------
  const missing = path.join(workDir, 'files', 'missing.txt');
  let summaryReceipt = null, errorLine = null;
  const two = await phase('http', {
    files, mcp: 'http',
    pipeline: '  - stage: summarize\n    when: over_budget\n    params: {max_chars: 1000}',
    steps: [reads[0], () => ({ name: 'Read', input: { file_path: missing } }), ...reads.slice(1), (json) => {
      const first = json.messages.find((m) => m.role === 'user');
      const text = textOf(first.content);
      if (!text.includes('archived as sha256:')) return null;
      summaryReceipt = /archived as (sha256:[0-9a-f]{64})/.exec(text)[1];
      return { name: 'mcp__compactor__search', input: { pattern: 'does not exist', receipt: summaryReceipt } };
    }],
  });
  assert.ok(summaryReceipt, 'no summary reached the upstream');
  const error = resultOf(two.received, 'toolu_2');
  errorLine = textOf(error.content).split('\n').find((l) => l.includes('does not exist'));
  assert.ok(errorLine, `the failed Read's result: ${JSON.stringify(error)}`);
  const last = two.received.at(-1);
  assert.ok(!JSON.stringify(last.messages).includes(JSON.stringify(errorLine).slice(1, -1)) ||
            resultOf([last], `toolu_${files.length + 2}`), 'the error line was not summarized away');
  const found = resultOf(two.received, `toolu_${files.length + 2}`);
  assert.ok(found && textOf(found.content).includes(errorLine.replace(/<\/?tool_use_error>/g, '')),
    `the search did not give back the error line: ${found ? textOf(found.content).slice(0, 400) : 'no answer'}`);
  console.log(`claude_code_mcp: http: the error line found through ${summaryReceipt.slice(0, 19)}…`);
  clearTimeout(deadline);
}

main().catch((e) => { console.error(e); process.exit(1); });
