// Claude Code itself through `compactor serve` with the shipped default config, whose budget is
// the window of the model Claude Code names (200,000 tokens for its default model in the shipped
// price table): Read calls of 30 KB files answered by a scripted upstream this script starts on
// 127.0.0.1, until the history has grown past the window's trigger (0.5). Checked, from serve's
// own log line per call ("in→out" in the budget's tokens) and the bodies the upstream received:
// no call under the trigger is touched; the history is compacted only once it nears the window,
// and then brought back within the budget; no forwarded body is over the window; every one passes
// the checkers. The upstream reports small usage, so Claude Code's own auto-compact stays out of it.
//
// usage: node claude_code_window.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR CONFIGS_DIR
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { listen, closedPort, startServe, run, checkAll, writeFiles } = require('../lib/harness.js');
const { writeMessage } = require('../lib/messages_reply.js');

const [cli, pluginDir, workDir, configsDir] = process.argv.slice(2);
const claude = path.join(__dirname, 'node_modules', '.bin', 'claude');
const READS = 34;
const deadline = setTimeout(() => { console.error('claude_code_window: timed out'); process.exit(1); }, 560000);

function scriptedUpstream(files) {
  const state = { received: [], reads: 0 };
  state.server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      state.received.push({ url: req.url, body });
      const json = body ? JSON.parse(body) : {};
      if (!req.url.startsWith('/v1/messages') || req.url.startsWith('/v1/messages/count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"input_tokens":100}');
        return;
      }
      const agent = Array.isArray(json.tools) && json.tools.some((t) => t.name === 'Read');
      let content = [{ type: 'text', text: agent ? `All ${READS} files read.` : 'ok' }], stop = 'end_turn';
      if (agent && state.reads < READS) {
        state.reads += 1;
        content = [{ type: 'text', text: `Reading file ${state.reads}.` },
          { type: 'tool_use', id: `toolu_read_${state.reads}`, name: 'Read', input: { file_path: files[state.reads - 1] } }];
        stop = 'tool_use';
      }
      const message = { id: `msg_${state.received.length}`, type: 'message', role: 'assistant', model: json.model, content,
        stop_reason: stop, stop_sequence: null, usage: { input_tokens: 1000, output_tokens: 20 } };
      writeMessage(res, message, json.stream);
    });
  });
  return state;
}

async function main() {
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(path.join(workDir, 'home'), { recursive: true });
  const files = writeFiles(path.join(workDir, 'files'), READS, 30000);
  const deadProxy = `http://127.0.0.1:${await closedPort()}`;
  // The shipped default, its fit and price table named where they are, its archive here.
  const config = path.join(workDir, 'default.yaml');
  fs.writeFileSync(config, fs.readFileSync(path.join(configsDir, 'default.yaml'), 'utf8')
    .replace('file: fits/claude-code.yaml', `file: ${path.join(configsDir, 'fits', 'claude-code.yaml')}`)
    .replace('prices: prices.yaml', `prices: ${path.join(configsDir, 'prices.yaml')}`)
    .replace('dir: .compactor/archive', 'dir: archive') + `plugin_dirs: ["${pluginDir}"]\n`);
  const upstream = scriptedUpstream(files);
  const upstreamPort = await listen(upstream.server);
  const serveLog = path.join(workDir, 'serve.log');
  const logFd = fs.openSync(serveLog, 'w');
  const { child, port } = await startServe(cli, config, workDir, { upstream: `http://127.0.0.1:${upstreamPort}` },
    { COMPACTOR_LOG: 'info' }, logFd);
  try {
    const env = {
      PATH: process.env.PATH, HOME: path.join(workDir, 'home'),
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_API_KEY: 'sk-ant-claude-code-test',
      DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', HTTPS_PROXY: deadProxy, HTTP_PROXY: deadProxy, NO_PROXY: '127.0.0.1,localhost',
    };
    const r = await run(claude, ['-p', `Read the ${READS} files in ${path.join(workDir, 'files')} one by one, then say so.`,
      '--allowedTools', 'Read'], { cwd: workDir, env });
    assert.equal(r.code, 0, `claude exited ${r.code}: ${r.out} ${r.err}`);
    assert.equal(upstream.reads, READS);
    const bodies = upstream.received.filter((q) => q.url.startsWith('/v1/messages?') || q.url === '/v1/messages')
      .map((q) => JSON.parse(q.body)).filter((b) => Array.isArray(b.tools) && b.tools.some((t) => t.name === 'Read'));
    checkAll(cli, workDir, bodies);

    // serve's line per call: "POST /v1/messages… 200 STATUS: … IN→OUT" in the budget's tokens.
    const calls = fs.readFileSync(serveLog, 'utf8').split('\n').filter((l) => / POST \/v1\/messages\S* 200 /.test(l))
      .map((l) => { const m = l.match(/ 200 (\w+): .* (\d+)→(\d+) /); return m && { status: m[1], in: Number(m[2]), out: Number(m[3]) }; })
      .filter((c) => c);
    assert.ok(calls.length >= READS, `${calls.length} calls in serve's log`);
    const WINDOW = 200000, TRIGGER = 100000;  // the default's trigger: half the window
    for (const c of calls) {
      if (c.in <= TRIGGER) assert.equal(c.out, c.in, `a call of ${c.in} tokens, under the trigger, was compacted to ${c.out}`);
      assert.ok(c.out <= WINDOW, `a call went out at ${c.out} tokens, over the ${WINDOW}-token window`);
    }
    const compacted = calls.filter((c) => c.out < c.in);
    assert.ok(compacted.length > 0, `the history never neared the window: the largest call was ${Math.max(...calls.map((c) => c.in))} tokens`);
    for (const c of compacted) {
      assert.ok(c.in > TRIGGER, `compacted at ${c.in} tokens, under the trigger`);
      assert.ok(c.out <= TRIGGER, `compacted to ${c.out} tokens, still over the trigger`);
    }
    const firstCompacted = calls.findIndex((c) => c.out < c.in);
    console.log(`claude_code_window: ok (${calls.length} calls; the first compaction at call ${firstCompacted + 1}, ` +
      `${calls[firstCompacted].in}→${calls[firstCompacted].out} tokens; ${calls.filter((c) => c.status === 'declined').length} declined by the cost gate)`);
  } finally {
    child.kill('SIGTERM');
    upstream.server.close();
    clearTimeout(deadline);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
