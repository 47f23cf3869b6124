// The Anthropic Messages API's own rules for a history, as checkers: what the API refuses, as
// opposed to Compactor's invariants (checkers/). The other APIs' adapters read their histories
// into this model form, so the Chat Completions and Responses adapters check pairing with the
// Messages API's rule.
#pragma once

#include "compactor/checker.hpp"

#include <memory>

namespace compactor::detail {

// structure: the message sequence itself (roles, system entries' places, the members the API
// takes in each block).
std::unique_ptr<Checker> make_structure_checker();
// pairing: every tool_use answered by exactly one tool_result, first in the very next message.
std::unique_ptr<Checker> make_pairing_checker();
// unique_ids: tool_use ids unique and of the API's pattern.
std::unique_ptr<Checker> make_unique_ids_checker();
// cache_control: at most four cache breakpoints.
std::unique_ptr<Checker> make_cache_control_checker();

}  // namespace compactor::detail
