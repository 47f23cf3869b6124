// A scripted Chat Completions upstream for the client tests: each call it answers with one
// read_file tool call (until `turns`), then a final text; every answer carries reasoning_content
// (streamed in two deltas when the request streams), as DeepSeek-style models send it. It
// records every request body (parsed) and the reasoning it issued per call id.
'use strict';
const http = require('node:http');

function chatUpstream({ turns, argsFor = (n) => ({ path: `/work/f${n}.txt` }), tool = 'read_file' }) {
  const state = { received: [], issued: {}, calls: 0 };
  state.server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const json = JSON.parse(body);
      state.received.push(json);
      const n = state.calls < turns ? ++state.calls : null;
      const id = n ? `call_${n}` : null;
      const reasoning = n ? `Reading file ${n} next, "quoted" \u00e9 \\ on purpose.` : 'All done.';
      if (id) state.issued[id] = reasoning;
      const calls = id ? [{ index: 0, id, type: 'function', function: { name: tool, arguments: JSON.stringify(argsFor(n)) } }] : undefined;
      const finish = id ? 'tool_calls' : 'stop';
      const usage = { prompt_tokens: Math.ceil(body.length / 4), completion_tokens: 5, total_tokens: Math.ceil(body.length / 4) + 5 };
      const base = { id: `chatcmpl-${state.received.length}`, created: 1, model: json.model };
      if (!json.stream) {
        const message = { role: 'assistant', content: id ? null : 'All files read.', reasoning_content: reasoning };
        if (calls) message.tool_calls = calls.map(({ index, ...c }) => c);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }], usage }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const w = (delta, finishReason = null) =>
        res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`);
      const half = Math.floor(reasoning.length / 2);
      w({ role: 'assistant', reasoning_content: reasoning.slice(0, half) });
      w({ reasoning_content: reasoning.slice(half) });
      w(calls ? { tool_calls: calls } : { content: 'All files read.' });
      w({}, finish);
      res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  return state;
}

// The Chat Completions rules for a history, from the API reference (independent of the adapter):
// every assistant message's tool_calls are answered by tool messages right after it, one per id;
// a tool message answers a call of the assistant message before its run of tool messages.
function chatRuleViolations(messages) {
  const out = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === 'tool') {
      let k = i;
      while (k > 0 && messages[k - 1].role === 'tool') k--;
      const calls = k > 0 && messages[k - 1].role === 'assistant' ? (messages[k - 1].tool_calls || []).map((c) => c.id) : [];
      if (!calls.includes(m.tool_call_id)) out.push(`messages.${i}: tool message ${m.tool_call_id} answers no call of the message before`);
    }
    if (m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length) {
      const answered = [];
      for (let k = i + 1; k < messages.length && messages[k].role === 'tool'; k++) answered.push(messages[k].tool_call_id);
      for (const c of m.tool_calls) {
        const times = answered.filter((a) => a === c.id).length;
        if (times !== 1) out.push(`messages.${i}: call ${c.id} is answered ${times} times`);
      }
    }
  }
  return out;
}

module.exports = { chatUpstream, chatRuleViolations };
