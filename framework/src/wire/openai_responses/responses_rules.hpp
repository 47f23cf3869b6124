// The OpenAI Responses API's rules for the items of `input` that the model form does not already
// hold (pairing does: a call's output follows it, an output answers a call before it), as
// checkers on the conversation the Responses adapter reads.
#pragma once

#include "compactor/checker.hpp"

namespace compactor::wire {

// unique_item_ids: the items' own ids (an item's `id`: msg_…, rs_…, fc_…, fco_…), carried with
// their blocks, are unique: the API refuses an input with a duplicate item.
CheckerPtr make_unique_item_ids_checker();

// reasoning_followed: a reasoning item is followed by the item it belongs to (the API refuses a
// reasoning item "without its required following item", and a call or message whose reasoning
// item is missing), so a reasoning item never ends an assistant turn, and in a turn a stage
// edited each reasoning item is still next to the item that followed it in the input.
CheckerPtr make_reasoning_followed_checker();

}  // namespace compactor::wire
