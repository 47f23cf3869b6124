// The checkers that ship with Compactor, by name.
#pragma once

#include "compactor/checker.hpp"
#include "wire/wire_format.hpp"

#include <string_view>
#include <vector>

namespace compactor {

// structure, pairing, unique_ids, pairs_unchanged, thinking_unchanged, recent_intact,
// request_kept, no_growth, archived, cache_control, order — in the order they run.
const std::vector<std::string_view>& builtin_checker_names();

// The built-in checkers that keep what the history means and that it stays recoverable:
// pairs_unchanged, thinking_unchanged, recent_intact, request_kept, archived, order. A config that
// leaves one out is warned (the API's own rules run whatever a config enables).
const std::vector<std::string_view>& safety_checker_names();

// Null when no built-in checker has that name.
CheckerPtr make_builtin_checker(std::string_view name);

std::vector<CheckerPtr> make_builtin_checkers();

// The built-in checkers that are the Anthropic Messages API's own rules rather than Compactor's
// invariants: structure, pairing, unique_ids, cache_control. A request of another API is checked
// by its wire format's rules instead.
const std::vector<std::string_view>& messages_api_rule_names();

// The checkers every Messages API input must pass, whatever a config enables: a history the API
// accepts (structure, pairing, unique_ids, at most 4 cache breakpoints).
std::vector<CheckerPtr> make_input_checkers();

// What `check` runs on a history of `format`: its rules, then Compactor's own invariants (all
// the built-in checkers but the Messages API's rules, for another API's history).
std::vector<CheckerPtr> checkers_for_check(const wire::WireFormat& format);

// Runs every checker on `input`; violations in checker order.
std::vector<Violation> run_checkers(const std::vector<CheckerPtr>& checkers, const CheckInput& input);

}  // namespace compactor
