// The built-in checkers, as the registry holds them (PluginRegistry::builtin_checkers: what the
// host compiles in, loader/builtins.cpp, and any a test program adds), made by name.
#pragma once

#include "compactor/checker.hpp"
#include "wire/wire_format.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace compactor {

// Their names in the order they run: structure, pairing, unique_ids, pairs_unchanged,
// thinking_unchanged, recent_intact, request_kept, no_growth, archived, cache_control, order.
std::vector<std::string> builtin_checker_names();

// Null when no built-in checker has that name.
CheckerPtr make_builtin_checker(std::string_view name);

std::vector<CheckerPtr> make_builtin_checkers();

// The checkers every Messages API input must pass, whatever a config enables: the built-in
// checkers that are that API's rules (structure, pairing, unique_ids, cache_control).
std::vector<CheckerPtr> make_input_checkers();

// What `check` runs on a history of `format`: the built-in checkers in their order, each API rule
// taken from the format's rules when it has one of that name and left out when not (they are not
// its rules), then the format's other rules.
std::vector<CheckerPtr> checkers_for_check(const wire::WireFormat& format);

// Runs every checker on `input`; violations in checker order.
std::vector<Violation> run_checkers(const std::vector<CheckerPtr>& checkers, const CheckInput& input);

}  // namespace compactor
