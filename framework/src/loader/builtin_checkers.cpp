#include "loader/builtin_checkers.hpp"

#include "checkers/checker_support.hpp"
#include "wire/anthropic/messages_rules.hpp"

#include <algorithm>

namespace compactor {

const std::vector<std::string_view>& builtin_checker_names() {
  static const std::vector<std::string_view> names = {
      "structure", "pairing", "unique_ids", "pairs_unchanged", "thinking_unchanged",
      "recent_intact", "request_kept", "no_growth", "archived", "cache_control", "order"};
  return names;
}

const std::vector<std::string_view>& safety_checker_names() {
  static const std::vector<std::string_view> names = {"pairs_unchanged", "thinking_unchanged", "recent_intact",
                                                      "request_kept",    "archived",           "order"};
  return names;
}

CheckerPtr make_builtin_checker(std::string_view name) {
  using namespace detail;
  if (name == "structure") return make_structure_checker();
  if (name == "pairing") return make_pairing_checker();
  if (name == "unique_ids") return make_unique_ids_checker();
  if (name == "pairs_unchanged") return make_pairs_unchanged_checker();
  if (name == "thinking_unchanged") return make_thinking_unchanged_checker();
  if (name == "recent_intact") return make_recent_intact_checker();
  if (name == "request_kept") return make_request_kept_checker();
  if (name == "no_growth") return make_no_growth_checker();
  if (name == "archived") return make_archived_checker();
  if (name == "cache_control") return make_cache_control_checker();
  if (name == "order") return make_order_checker();
  return nullptr;
}

std::vector<CheckerPtr> make_builtin_checkers() {
  std::vector<CheckerPtr> checkers;
  for (std::string_view n : builtin_checker_names()) checkers.push_back(make_builtin_checker(n));
  return checkers;
}

const std::vector<std::string_view>& messages_api_rule_names() {
  static const std::vector<std::string_view> names = {"structure", "pairing", "unique_ids", "cache_control"};
  return names;
}

std::vector<CheckerPtr> make_input_checkers() {
  std::vector<CheckerPtr> checkers;
  for (std::string_view n : messages_api_rule_names()) checkers.push_back(make_builtin_checker(n));
  return checkers;
}

std::vector<CheckerPtr> checkers_for_check(const wire::WireFormat& format) {
  // The built-in order, an API rule taken from the format's when it has one of that name, then
  // the format's other rules.
  std::vector<CheckerPtr> rules = format.rules(), out;
  const auto& api_rules = messages_api_rule_names();
  for (std::string_view n : builtin_checker_names()) {
    auto rule = std::find_if(rules.begin(), rules.end(), [&](const CheckerPtr& c) { return c && c->name() == n; });
    if (rule != rules.end()) out.push_back(std::move(*rule));
    else if (std::find(api_rules.begin(), api_rules.end(), n) == api_rules.end()) out.push_back(make_builtin_checker(n));
  }
  for (CheckerPtr& rule : rules)
    if (rule) out.push_back(std::move(rule));
  return out;
}

std::vector<Violation> run_checkers(const std::vector<CheckerPtr>& checkers, const CheckInput& input) {
  std::vector<Violation> out;
  for (const CheckerPtr& c : checkers) c->check(input, out);
  return out;
}

}  // namespace compactor
