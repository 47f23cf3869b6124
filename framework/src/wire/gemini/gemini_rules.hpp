// The Gemini API's rules for a history (`contents`), as checkers on the conversation the stages
// see, where a Content is one message (messages.N is contents.N), a functionCall part a tool_use
// block and a functionResponse part a tool_result block. Each is a rule Google's documentation
// states or an error the API answers with (docs/design/wire-formats.md, "The Gemini API",
// lists the sources):
//
// - gemini_turns: every turn has at least one part; functionCall parts only in a `model` turn
//   and functionResponse parts only in a `user` one; a model turn with function calls comes
//   right after a user turn or a function response turn ("Please ensure that function call turn
//   comes immediately after a user turn or after a function response turn"). Roles other than
//   `user` and `model` are refused when the body is read, under this rule's name.
// - gemini_function_responses: a model turn with N functionCall parts is answered by the very
//   next turn's N functionResponse parts, one per call (matched by id where given, else by name
//   and order when read), and a functionResponse answers a call of the turn right before it
//   ("Please ensure that the number of function response parts is equal to the number of
//   function call parts of the function call turn"; "function response turn comes immediately
//   after a function call turn"). A history does not end with a call turn. A next turn of user
//   content with no function response at all leaves the calls abandoned, which Gemini CLI does
//   after its loop check and the rule, about the function response turn, does not concern.
// - gemini_thought_signatures: a thoughtSignature the input gave a functionCall part is still on
//   that part, byte-identical; in the current turn (after the last user turn with content other
//   than function responses) the first functionCall part of every step carries its signature
//   when the model issues them ("Function call is missing a thought_signature").
#pragma once

#include "compactor/checker.hpp"

#include <boost/json/value.hpp>

namespace compactor::wire {

CheckerPtr make_gemini_turns_checker();
CheckerPtr make_gemini_function_responses_checker();
CheckerPtr make_gemini_thought_signatures_checker();

// The thoughtSignature a functionCall's tool_use block carries (the part's `thoughtSignature`
// or `thought_signature`), or null.
const boost::json::value* thought_signature_of(const Block& call);

}  // namespace compactor::wire
