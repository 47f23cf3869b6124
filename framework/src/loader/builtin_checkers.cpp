#include "loader/builtin_checkers.hpp"

#include "loader/plugin_loader.hpp"

#include <algorithm>

namespace compactor {

std::vector<std::string> builtin_checker_names() {
  std::vector<std::string> names;
  for (const BuiltinChecker& b : PluginRegistry::instance().builtin_checkers()) names.push_back(b.name());
  return names;
}

CheckerPtr make_builtin_checker(std::string_view name) {
  const BuiltinChecker* b = PluginRegistry::instance().builtin_checker(name);
  return b != nullptr ? b->make() : nullptr;
}

std::vector<CheckerPtr> make_builtin_checkers() {
  std::vector<CheckerPtr> checkers;
  for (const BuiltinChecker& b : PluginRegistry::instance().builtin_checkers()) checkers.push_back(b.make());
  return checkers;
}

std::vector<CheckerPtr> make_input_checkers() {
  std::vector<CheckerPtr> checkers;
  for (const BuiltinChecker& b : PluginRegistry::instance().builtin_checkers())
    if (b.traits.api_rule) checkers.push_back(b.make());
  return checkers;
}

std::vector<CheckerPtr> checkers_for_check(const wire::WireFormat& format) {
  std::vector<CheckerPtr> rules = format.rules(), out;
  for (const BuiltinChecker& b : PluginRegistry::instance().builtin_checkers()) {
    auto rule = std::find_if(rules.begin(), rules.end(), [&](const CheckerPtr& c) { return c && c->name() == b.name(); });
    if (rule != rules.end()) out.push_back(std::move(*rule));
    else if (!b.traits.api_rule) out.push_back(b.make());
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
