// The carry rule, one for every wire format: what the conversation model has no place for
// travels with the message or block it came with, opaque, and comes back out as it came.
//
// - A member of a wire item that its block has no field for (a Chat tool message's `name`, a
//   tool call's `index`, a Responses item's `id`) rides in the block's `carried` member, an
//   object of those members as the client sent them.
// - An item, part or set of message fields the model has no block for (reasoning_content, a
//   Responses reasoning item with its encrypted_content, an image part, an unknown part kind)
//   is a block of its own: {"type":"carried","of":"fields"|"part"|"item","value":…}, with
//   "reasoning": true when it holds the model's reasoning.
//
// Stages see such blocks as blocks of another kind and leave them alone; a message a stage drops
// or summarizes is archived whole, carried data included; an edited block keeps its `carried`
// member (with_result_contents keeps every member but content); a summarizer is shown only the
// block's type, never its value. Carried data counts in the budget, since it is sent.
#pragma once

#include "compactor/block.hpp"
#include "compactor/checker.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace compactor::wire {

inline constexpr std::string_view kCarriedType = "carried";    // a block of carried data
inline constexpr std::string_view kCarriedMember = "carried";  // a block's carried members

// {"type":"carried","of":OF,"value":VALUE} (+ "reasoning": true).
boost::json::object carried_block(std::string_view of, boost::json::value value, bool reasoning = false);

bool is_carried(const Block& block);
bool carries_reasoning(const Block& block);

// carried_unchanged: a carried block, and the `carried` member of a tool call or result, is
// never modified and never moves to another message; it leaves only with its whole message. The
// reasoning carried by the last assistant turn of an open tool loop stays (the APIs that return
// reasoning want it back within the turn). The counterpart of thinking_unchanged for what an
// adapter keeps opaque.
CheckerPtr make_carried_unchanged_checker();

// The conversation as the Messages API takes it, for a history another API's adapter read and
// `compactor import` writes as Anthropic messages: what that adapter carried is that API's and
// the Messages API refuses it (a tool call's `index`, a message's `name`, an image_url part), so
// it is left out, each kind counted in `left_out` ("tool_use member index" → 3, "carried part
// image_url" → 1). The conversation's own bytes when it carries nothing.
std::string without_carried(const Conversation& conversation, std::map<std::string, std::size_t>& left_out);

}  // namespace compactor::wire
