// What the client tests share: a `compactor serve` started on a free loopback port, a closed
// port to point proxies at (so any request a client would make elsewhere fails at once), a child
// process run to its end, and `compactor check` over the bodies the upstream received.
'use strict';
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

function closedPort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

// `compactor serve --config CONFIG` in `cwd`, its upstreams given as options
// ({upstream, openaiUpstream, geminiUpstream}; the OpenAI one is `upstream` when not given: one
// loopback stand-in answers for both), its stderr inherited or to a file descriptor; resolves
// with {child, port} once it listens.
function startServe(cli, config, cwd, upstreams, env = {}, stderr = 'inherit') {
  const args = ['serve', '--config', config, '--listen', '127.0.0.1:0', '--upstream', upstreams.upstream];
  args.push('--upstream', `openai=${upstreams.openaiUpstream || upstreams.upstream}`);
  if (upstreams.geminiUpstream) args.push('--gemini-upstream', upstreams.geminiUpstream);
  return new Promise((resolve, reject) => {
    const child = spawn(cli, args, { cwd, stdio: ['ignore', 'pipe', stderr], env: { ...process.env, ...env } });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.on('exit', (code) => reject(new Error(`compactor serve exited ${code}: ${out}`)));
  });
}

// Runs a command to its end, or until `options.until()` turns true (then it is killed): {code, out, err}.
function run(cmd, args, options = {}) {
  const { until, ...spawnOptions } = options;
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { ...spawnOptions, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const poll = until ? setInterval(() => { if (until()) child.kill('SIGKILL'); }, 100) : null;
    child.on('exit', (code) => {
      if (poll) clearInterval(poll);
      resolve({ code, out, err });
    });
  });
}

// `compactor check [--input-format F]` on each body (a JS object or a string); throws naming
// the first one refused.
function checkAll(cli, workDir, bodies, inputFormat) {
  bodies.forEach((b, i) => {
    const file = path.join(workDir, `forwarded-${i}.json`);
    fs.writeFileSync(file, typeof b === 'string' ? b : JSON.stringify(b));
    const args = ['check', '--input', file];
    if (inputFormat) args.push('--input-format', inputFormat);
    execFileSync(cli, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  });
}

// Files of about `chars` characters each, named f01.txt…, in `dir`.
function writeFiles(dir, count, chars) {
  fs.mkdirSync(dir, { recursive: true });
  const files = [];
  for (let i = 1; i <= count; i++) {
    const lines = [];
    for (let l = 0; lines.join('\n').length < chars; l++) lines.push(`file ${i} line ${l}: ${'lorem ipsum dolor sit amet '.repeat(3)}`);
    const file = path.join(dir, `f${String(i).padStart(2, '0')}.txt`);
    fs.writeFileSync(file, lines.join('\n'));
    files.push(file);
  }
  return files;
}

module.exports = { listen, closedPort, startServe, run, checkAll, writeFiles };
