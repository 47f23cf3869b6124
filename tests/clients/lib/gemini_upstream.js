// A scripted stand-in for the Gemini API on 127.0.0.1, what the Gemini client tests drive their
// clients against: `POST /v1beta/models/M:generateContent` answered with one JSON response and
// `:streamGenerateContent?alt=sse` with server-sent events in several chunks (a thought part
// first, as a thinking model streams, then the answer), usage reporting a quarter of the bytes
// received as prompt tokens. A call that asks for a structured answer (a router's) gets an object
// that fills its schema. An agent call is answered by `script(body, state)`, which returns the
// model turn's parts; every functionCall part it returns gets a fresh thoughtSignature, as a
// Gemini 3 model signs each step (only the first call of a parallel step is signed), and the
// signatures issued are kept for the test to compare with what comes back.
'use strict';
const crypto = require('node:crypto');
const http = require('node:http');

// An object that satisfies a (Gemini or JSON) schema: every member, enum values first, numbers
// 10 but a confidence 0 (Gemini CLI's loop check asks how sure the model is that the session
// loops: not at all).
function fill(schema, key = '') {
  if (!schema || typeof schema !== 'object') return null;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const type = String(schema.type || 'object').toLowerCase();
  if (type === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(schema.properties || {})) out[k] = fill(v, k);
    return out;
  }
  if (type === 'array') return [];
  if (type === 'integer' || type === 'number') return /confidence/i.test(key) ? 0 : 10;
  if (type === 'boolean') return false;
  return 'ok';
}

function geminiUpstream(script) {
  const state = { received: [], issued: new Map(), agentCalls: 0, routerCalls: 0 };
  const sign = () => crypto.randomBytes(48).toString('base64');
  state.server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      state.received.push({ url: req.url, headers: req.headers, body });
      const m = req.url.match(/^\/v1beta\/models\/([^:?]+):(generateContent|streamGenerateContent)/);
      if (!m) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(req.url.includes(':countTokens') ? '{"totalTokens":100}' : '{}');
        return;
      }
      const json = JSON.parse(body);
      const usage = { promptTokenCount: Math.ceil(Buffer.byteLength(body) / 4), candidatesTokenCount: 20 };
      usage.totalTokenCount = usage.promptTokenCount + usage.candidatesTokenCount;
      const config = json.generationConfig || {};
      const schema = config.responseJsonSchema || config.responseSchema;
      let parts;
      if (schema) {
        state.routerCalls += 1;
        parts = [{ text: JSON.stringify(fill(schema)) }];
      } else {
        const declared = (json.tools || []).flatMap((t) => t.functionDeclarations || []);
        parts = declared.length ? script(json, state) : [{ text: 'ok' }];
        if (declared.length) state.agentCalls += 1;
        let signed = false;
        parts = parts.map((p) => {
          if (!p.functionCall) return p;
          if (signed) return p;  // a parallel step: only its first call is signed
          signed = true;
          const signature = sign();
          state.issued.set(signature, p.functionCall);
          return { ...p, thoughtSignature: signature };
        });
        // A step without calls is signed on its last part.
        if (!signed && parts.length) parts[parts.length - 1] = { ...parts[parts.length - 1], thoughtSignature: sign() };
      }
      const response = (p, finish) => ({
        candidates: [{ content: { role: 'model', parts: p }, index: 0, ...(finish ? { finishReason: 'STOP' } : {}) }],
        usageMetadata: usage, modelVersion: m[1], responseId: `resp_${state.received.length}`,
      });
      if (m[2] === 'generateContent') {
        res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
        res.end(JSON.stringify(response(parts, true)));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const events = [response([{ text: 'Thinking about the next step.', thought: true }], false)];
      parts.forEach((p, i) => events.push(response([p], i === parts.length - 1)));
      for (const e of events) res.write(`data: ${JSON.stringify(e)}\r\n\r\n`);
      res.end();
    });
  });
  return state;
}

module.exports = { geminiUpstream, fill };
