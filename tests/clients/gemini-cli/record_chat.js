// Records a Gemini CLI chat offline, for tests/data/gemini-cli: Gemini CLI (pinned here) runs a
// file-reading task against the scripted Gemini API of tests/clients/lib/gemini_upstream.js on
// 127.0.0.1 (no key, no network), and the chat it saves under
// ~/.gemini/tmp/<project>/chats/session-*.jsonl is copied to OUT. The task: read 8 files of
// 6 KB one per step, then two more in one step (parallel calls), then answer.
//
// usage: node record_chat.js OUT
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { listen, closedPort, run, writeFiles } = require('../lib/harness.js');
const { geminiUpstream } = require('../lib/gemini_upstream.js');

const out = process.argv[2];
const work = '/tmp/gemini-chat-fixture';

async function main() {
  fs.rmSync(work, { recursive: true, force: true });
  const home = path.join(work, 'home');
  fs.mkdirSync(path.join(home, '.gemini'), { recursive: true });
  fs.writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify({
    security: { auth: { selectedType: 'gemini-api-key' } },
    privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false }, general: { enableAutoUpdate: false },
  }));
  const project = path.join(work, 'project');
  const files = writeFiles(path.join(project, 'files'), 10, 6000);
  let step = 0;
  const upstream = geminiUpstream(() => {
    step += 1;
    if (step <= 8) return [{ text: `Reading file ${step}.` }, { functionCall: { name: 'read_file', args: { file_path: files[step - 1] } } }];
    if (step === 9) return [{ text: 'Reading the last two together.' },
      { functionCall: { name: 'read_file', args: { file_path: files[8] } } },
      { functionCall: { name: 'read_file', args: { file_path: files[9] } } }];
    return [{ text: 'All 10 files read: each holds numbered lorem ipsum lines.' }];
  });
  const port = await listen(upstream.server);
  const dead = `http://127.0.0.1:${await closedPort()}`;
  const r = await run(path.join(__dirname, 'node_modules', '.bin', 'gemini'),
    ['--skip-trust', '--approval-mode', 'yolo', '--output-format', 'json', '-p', `Read the 10 files in ${path.join(project, 'files')}, then sum them up.`],
    { cwd: project, env: { PATH: process.env.PATH, HOME: home, GOOGLE_GEMINI_BASE_URL: `http://127.0.0.1:${port}`, GEMINI_API_KEY: 'record-key',
      GEMINI_CLI_NO_RELAUNCH: 'true', HTTPS_PROXY: dead, HTTP_PROXY: dead, NO_PROXY: '127.0.0.1,localhost' } });
  upstream.server.close();
  if (r.code !== 0) throw new Error(`gemini exited ${r.code}: ${r.err.slice(-2000)}`);
  const chats = fs.readdirSync(path.join(home, '.gemini', 'tmp'), { recursive: true }).filter((f) => /chats\/session-.*\.jsonl?$/.test(f));
  if (chats.length !== 1) throw new Error(`expected one chat, found ${chats.join(', ')}`);
  fs.copyFileSync(path.join(home, '.gemini', 'tmp', chats[0]), out);
  console.log(`recorded ${chats[0]} → ${out}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
