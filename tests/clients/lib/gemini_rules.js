// The Gemini API's rules for a generateContent body, written from Google's documentation (not
// from Compactor's checkers), for the client tests to hold every forwarded body to:
// - a Content's role is "user" or "model" (unset means user) and it has at least one Part
//   (the Content reference: "Must be either 'user' or 'model'", "must have at least one Part");
// - a model turn with function calls comes right after a user turn or a function response turn,
//   is not the last turn, and when the very next turn answers it, it answers each of its N
//   functionCall parts with one of N functionResponse parts, by id where the response has one,
//   else by name in order (a user turn with no function response abandons the calls; the API's
//   400s "function call turn comes immediately after a user turn or after a function response
//   turn", "the number of function response parts is equal to the number of function call parts
//   of the function call turn"); a function response turn follows a function call turn;
// - in the current turn (after the last user turn with content other than function responses)
//   the first functionCall part of every step carries its thoughtSignature (the thought
//   signatures page: "The first functionCall part in each step of the current turn must include
//   its thought_signature").
// Returns the list of what is wrong, each naming contents.N.
'use strict';

const isCall = (p) => p && typeof p === 'object' && (p.functionCall || p.function_call);
const isResponse = (p) => p && typeof p === 'object' && (p.functionResponse || p.function_response);
const call = (p) => p.functionCall || p.function_call;
const response = (p) => p.functionResponse || p.function_response;
const signature = (p) => p.thoughtSignature || p.thought_signature;

function geminiViolations(body) {
  const out = [];
  const contents = body.contents;
  if (!Array.isArray(contents) || contents.length === 0) return ['contents: not a non-empty array'];
  const role = (c) => (c.role === undefined ? 'user' : c.role);
  contents.forEach((c, i) => {
    if (role(c) !== 'user' && role(c) !== 'model') out.push(`contents.${i}: role ${JSON.stringify(c.role)}`);
    if (!Array.isArray(c.parts) || c.parts.length === 0) out.push(`contents.${i}: no parts`);
  });
  if (out.length) return out;
  contents.forEach((c, i) => {
    const calls = c.parts.filter(isCall);
    const responses = c.parts.filter(isResponse);
    if (calls.length && role(c) !== 'model') out.push(`contents.${i}: function calls in a user turn`);
    if (responses.length && role(c) !== 'user') out.push(`contents.${i}: function responses in a model turn`);
    if (calls.length) {
      if (i === 0 || role(contents[i - 1]) !== 'user') out.push(`contents.${i}: a function call turn not right after a user or function response turn`);
      const next = contents[i + 1];
      const answers = next && role(next) === 'user' ? next.parts.filter(isResponse) : [];
      if (!next) {
        out.push(`contents.${i}: the history ends with a function call turn`);
      } else if (answers.length === 0 && role(next) === 'user') {
        // The client abandoned the calls (a user turn without function responses): the rule is
        // about the function response turn, and there is none.
      } else if (answers.length !== calls.length) {
        out.push(`contents.${i}: ${calls.length} function calls, ${answers.length} function responses in the next turn`);
      } else {
        const open = calls.map((p) => ({ id: call(p).id, name: call(p).name, answered: false }));
        for (const a of answers) {
          const r = response(a);
          let match = r.id ? open.find((o) => !o.answered && o.id === r.id) : undefined;
          if (!match) match = open.find((o) => !o.answered && o.name === r.name);
          if (!match) out.push(`contents.${i + 1}: a function response (${r.name}) answers no call of contents.${i}`);
          else match.answered = true;
        }
      }
    }
    if (responses.length && !(i > 0 && contents[i - 1].parts.some(isCall))) out.push(`contents.${i}: function responses with no function call turn before`);
  });
  let start = 0;
  contents.forEach((c, i) => {
    if (role(c) === 'user' && c.parts.some((p) => !isResponse(p))) start = i + 1;
  });
  for (let i = start; i < contents.length; i++) {
    const first = contents[i].parts.find(isCall);
    if (role(contents[i]) === 'model' && first && !signature(first))
      out.push(`contents.${i}: the first function call of a step of the current turn has no thoughtSignature`);
  }
  return out;
}

module.exports = { geminiViolations, isCall, isResponse, call, response, signature };
