// The official MCP SDK's client (@modelcontextprotocol/sdk, pinned by package-lock.json) drives
// `compactor mcp` over stdio, started in a folder other than the archive's, as an agent would. The
// archive is written by two real `compactor run`s: micro masks a 1 MB result and a screenshot,
// then snip archives a middle that holds micro's markers. The client initializes, lists the
// tools, reads the 1 MB result back in pages that join to its bytes, reads the screenshot as image
// content and the snapshot one message a line, searches from the snapshot into the result it
// names, and gets tool errors for unknown, malformed and corrupted receipts. Offline: nothing but
// the child process.
//
// The same over MCP's Streamable HTTP transport at `compactor serve`'s /mcp (the fourth argument
// `http`): the server's archive is the folder the runs wrote.
//
// usage: node sdk_client.js COMPACTOR_CLI PLUGIN_DIR WORK_DIR [stdio|http]
'use strict';
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { spawn } = require('node:child_process');
const { McpError } = require('@modelcontextprotocol/sdk/types.js');

const [cli, pluginDir, workDir] = process.argv.slice(2, 5).map((p) => path.resolve(p));
const overHttp = process.argv[5] === 'http';
const deadline = setTimeout(() => { console.error('mcp sdk_client: timed out'); process.exit(1); }, 110000);

fs.rmSync(workDir, { recursive: true, force: true });
fs.mkdirSync(path.join(workDir, 'agent'), { recursive: true });
const archive = path.join(workDir, 'archive');
const receiptsIn = (text) => text.match(/sha256:[0-9a-f]{64}/g) || [];
const codePoints = (s) => [...s].length;

// ---- the archive, written by real runs -------------------------------------------------------
// 1 MB of text with one to four bytes a code point and a line to find in the middle.
const bigLines = [];
for (let i = 0, bytes = 0; bytes < 1 << 20; ++i) {
  bigLines.push(`${String(i).padStart(6, '0')} données ✓ 😀 "quoted" \\ tab\there lorem ipsum dolor sit amet\n`);
  if (i === 5000) bigLines.push('NEEDLE-7781: the cache key is 0x5eed\n');
  bytes += Buffer.byteLength(bigLines[bigLines.length - 1]);
}
const big = bigLines.join('');
assert.ok(Buffer.byteLength(big) >= 1 << 20, 'the result is 1 MB');
const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const call = (id, name) => ({ role: 'assistant', content: [{ type: 'tool_use', id, name, input: {} }] });
const result = (id, content) => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content }] });
const first = [
  { role: 'user', content: 'read the big log, take a screenshot, read the notes' },
  call('toolu_big', 'Read'), result('toolu_big', big),
  call('toolu_shot', 'Screenshot'),
  result('toolu_shot', [{ type: 'text', text: 'the screen:' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }]),
  call('toolu_notes', 'Read'), result('toolu_notes', 'notes: '.repeat(60)),
  { role: 'assistant', content: 'done' }, { role: 'user', content: 'thanks' },
];
function run(name, conversation, pipeline) {
  fs.writeFileSync(path.join(workDir, `${name}.json`), JSON.stringify(conversation));
  fs.writeFileSync(path.join(workDir, `${name}.yaml`),
    `version: 1\nbudget: {limit: 1000}\nrecent: {exchanges: 0}\narchive: {dir: ${JSON.stringify(archive)}}\n` +
    `plugin_dirs: [${JSON.stringify(pluginDir)}]\npipeline:\n${pipeline}`);
  try {
    execFileSync(cli, ['run', '--config', `${name}.yaml`, '--input', `${name}.json`, '--output', `${name}.out.json`],
      { cwd: workDir, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    assert.equal(e.status, 1, `run ${name}: ${e.stderr}`);  // still over the small budget: fine
  }
  return JSON.parse(fs.readFileSync(path.join(workDir, `${name}.out.json`), 'utf8'));
}
const masked = run('micro', first, '  - stage: micro\n    params: {keep_recent: 0}\n');
const [bigReceipt] = receiptsIn(masked[2].content[0].content);
const [shotReceipt] = receiptsIn(masked[4].content[0].content);
const [notesReceipt] = receiptsIn(masked[6].content[0].content);
assert.ok(bigReceipt && shotReceipt && notesReceipt, 'micro masked all three results');

const second = [...masked];
for (let i = 0; i < 20; ++i) second.push({ role: 'assistant', content: `step ${i}` }, { role: 'user', content: `go on ${i}` });
const snipped = run('snip', second, '  - stage: snip\n    params: {max_messages: 10, keep_head: 1}\n');
const marker = snipped[1].content[0].text;
const cut = /^\[compactor snip: (\d+) messages archived as (sha256:[0-9a-f]{64})\]/.exec(marker);
assert.ok(cut, `snip's marker: ${marker}`);
const middle = second.slice(1, 1 + Number(cut[1]));
const snapshotReceipt = cut[2];

// ---- the client ------------------------------------------------------------------------------
async function main() {
  let serverLog = '';
  let transport, serve;
  if (!overHttp) {
    transport = new StdioClientTransport({
      command: cli, args: ['mcp', '--archive', archive], cwd: path.join(workDir, 'agent'), stderr: 'pipe',
    });
    transport.stderr.on('data', (chunk) => { serverLog += chunk; });
  } else {
    // serve, on the archive the runs wrote (an upstream it never calls here).
    fs.writeFileSync(path.join(workDir, 'serve.yaml'),
      `version: 1\nbudget: {limit: 1000}\narchive: {dir: ${JSON.stringify(archive)}}\nplugin_dirs: [${JSON.stringify(pluginDir)}]\npipeline: []\n`);
    serve = spawn(cli, ['serve', '--config', 'serve.yaml', '--listen', '127.0.0.1:0', '--upstream', 'http://127.0.0.1:9'],
      { cwd: workDir, stdio: ['ignore', 'pipe', 'pipe'] });
    serve.stderr.on('data', (chunk) => { serverLog += chunk; });
    const port = await new Promise((resolve, reject) => {
      let out = '';
      serve.stdout.on('data', (d) => { out += d; const m = out.match(/127\.0\.0\.1:(\d+)/); if (m) resolve(Number(m[1])); });
      serve.on('exit', (code) => reject(new Error(`compactor serve exited ${code}: ${serverLog}`)));
    });
    transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`));
  }
  // Every message the server sent, as the client received it.
  const received = [];
  const start = transport.start.bind(transport);
  transport.start = async () => {
    const inner = transport.onmessage;
    transport.onmessage = (message, extra) => { received.push(message); inner(message, extra); };
    return start();
  };
  const client = new Client({ name: 'compactor-test', version: '1.0.0' });
  await client.connect(transport);

  // initialize: the newest version the SDK speaks, this server's name and instructions.
  assert.equal(received[0].result.protocolVersion, '2025-11-25');
  assert.deepEqual(client.getServerVersion(), { name: 'compactor', title: 'Compactor archive', version: '0.1.0' });
  assert.deepEqual(client.getServerCapabilities(), { tools: { listChanged: false } });
  assert.match(client.getInstructions(), /restore gives back what a receipt holds/);

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ['restore', 'search']);
  assert.deepEqual(tools[0].inputSchema.required, ['receipt']);
  assert.deepEqual(Object.keys(tools[0].inputSchema.properties), ['receipt', 'offset', 'max_chars']);
  assert.deepEqual(tools[1].inputSchema.required, ['pattern', 'receipt']);
  for (const t of tools) assert.equal(t.annotations.readOnlyHint, true);

  // Every page of a receipt, joined; each page at most 20,000 code points, the last without a
  // "more chars" line.
  async function restoreAll(receipt) {
    let offset = 0, text = '', pages = 0;
    const images = [];
    for (;;) {
      const r = await client.callTool({ name: 'restore', arguments: { receipt, offset } });
      assert.equal(r.isError, false, JSON.stringify(r.content).slice(0, 300));
      ++pages;
      const page = r.content[0].text;
      assert.ok(codePoints(page) <= 20000);
      text += page;
      offset += codePoints(page);
      images.push(...r.content.filter((c) => c.type === 'image'));
      const last = r.content[r.content.length - 1];
      const more = last.type === 'text' && r.content.length > 1 ? /^(\d+) more chars: call again with offset=(\d+)$/.exec(last.text) : null;
      if (!more) return { text, images, pages };
      assert.equal(Number(more[2]), offset);
    }
  }

  // The 1 MB result, in pages that join to its bytes.
  const started = process.hrtime.bigint();
  const restoredBig = await restoreAll(bigReceipt);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  assert.ok(Buffer.from(restoredBig.text).equals(Buffer.from(big)), 'the pages join to the original bytes');
  assert.equal(restoredBig.pages, Math.ceil(codePoints(big) / 20000));
  console.log(`mcp sdk_client: ${Buffer.byteLength(big)} bytes (${codePoints(big)} code points) restored in ` +
              `${restoredBig.pages} pages, ${ms.toFixed(0)} ms`);

  // The screenshot: its text and placeholder, and the image as image content.
  const shot = await restoreAll(shotReceipt);
  assert.equal(shot.text, 'the screen:\n[image 1, image/png: given as image content]');
  assert.deepEqual(shot.images, [{ type: 'image', data: png, mimeType: 'image/png' }]);

  // snip's snapshot: one message a line, the very messages it cut (micro's markers in them).
  const snapshot = await restoreAll(snapshotReceipt);
  const lines = snapshot.text.split('\n');
  assert.equal(lines.pop(), '');
  assert.deepEqual(lines.map((l) => JSON.parse(l)), middle);

  // Errors are tool results with isError, never protocol errors.
  const unknown = 'sha256:' + '0'.repeat(64);
  const expectToolError = async (args, pattern) => {
    const r = await client.callTool({ name: 'restore', arguments: args });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.match(r.content[0].text, pattern);
  };
  // Over serve's /mcp the client is remote: the error shows the server's folder as <archive>.
  const shownArchive = overHttp ? '<archive>' : archive;
  await expectToolError({ receipt: unknown }, new RegExp(`^${shownArchive}: no blob ${unknown} in this archive`));
  await expectToolError({ receipt: 'sha256:xyz' }, /^"sha256:xyz" is not a receipt: a receipt is sha256: and 64 lowercase hex digits/);
  await expectToolError({ receipt: '../../etc/passwd' }, /^"\.\.\/\.\.\/etc\/passwd" is not a receipt/);
  await expectToolError({ receipt: bigReceipt, offset: 10 ** 9 }, /^offset 1000000000 is past the end/);
  // Corrupted: a file at the blob's loose name (read before the packs) with other bytes.
  const hex = notesReceipt.slice(7);
  fs.mkdirSync(path.join(archive, hex.slice(0, 2)), { recursive: true });
  fs.writeFileSync(path.join(archive, hex.slice(0, 2), hex), '"tampered"');
  await expectToolError({ receipt: notesReceipt }, /: the blob does not match its hash \(the archive is corrupted\)$/);

  // search, from the snapshot into the result its marker names; the offset restores the hit.
  const found = await client.callTool({ name: 'search', arguments: { pattern: 'NEEDLE-7781', receipt: snapshotReceipt } });
  assert.equal(found.isError, false);
  const hits = found.content[0].text.split('\n');
  const needleAt = codePoints(big.slice(0, big.indexOf('NEEDLE-7781')));
  assert.equal(hits[0], `${bigReceipt} offset=${needleAt}: NEEDLE-7781: the cache key is 0x5eed`);
  // The corrupted one is left out, and said so.
  assert.equal(hits[1], `1 matching line in 1 of 3 blobs searched (${snapshotReceipt} and the 2 blobs it leads to); ` +
                        '1 named receipt(s) could not be read (not in this archive, or corrupted)');
  const atHit = await client.callTool({ name: 'restore', arguments: { receipt: bigReceipt, offset: needleAt, max_chars: 11 } });
  assert.equal(atHit.content[0].text, 'NEEDLE-7781');

  // Only a call the protocol cannot carry out is a JSON-RPC error.
  await assert.rejects(client.callTool({ name: 'unrestore', arguments: {} }),
    (e) => e instanceof McpError && e.code === -32602 && /Unknown tool: unrestore/.test(e.message));

  await client.close();
  if (serve) {
    serve.kill('SIGTERM');
    await new Promise((resolve) => serve.on('exit', resolve));
    assert.doesNotMatch(serverLog, /error|warn/i, serverLog);
  } else {
    assert.equal(serverLog, '', 'the server logs nothing when nothing is wrong');
  }
  clearTimeout(deadline);
  console.log(`mcp sdk_client (${overHttp ? 'Streamable HTTP at serve\'s /mcp' : 'stdio'}): ok`);
}

main().catch((e) => { console.error(e); process.exit(1); });
