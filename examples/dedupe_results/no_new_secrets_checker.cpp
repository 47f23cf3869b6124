// no_new_secrets: a team's own rule, enabled in YAML like a built-in checker
// (`checkers.enabled: [..., no_new_secrets]`). A stage must not put into what we send a secret
// the history did not already hold there (a summary quoting a key from an archived tool result,
// say): the candidate may hold no more API-key-looking tokens than the conversation it came from.
#include "compactor/plugin.hpp"

#include <fmt/core.h>

#include <string_view>

namespace {

using namespace compactor;

constexpr std::string_view kPrefixes[] = {"sk-ant-", "sk-proj-", "AKIA", "ghp_"};

std::size_t secrets_in(const Conversation& c) {
  std::size_t n = 0;
  for (const MessagePtr& m : c.messages())
    for (std::string_view prefix : kPrefixes)
      for (std::size_t at = m->raw().find(prefix); at != std::string_view::npos; at = m->raw().find(prefix, at + 1)) ++n;
  return n;
}

class NoNewSecrets final : public Checker {
 public:
  std::string_view name() const override { return "no_new_secrets"; }
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    std::size_t before = secrets_in(in.before), after = secrets_in(in.candidate);
    if (after > before)
      out.push_back(Violation::of(name(), fmt::format("the candidate holds {} API-key-looking tokens, the conversation it "
                                                     "came from {}", after, before)));
  }
};

void register_plugin(PluginRegistrar& registrar) {
  CheckerInfo info;
  info.name = "no_new_secrets";
  info.description = "a candidate may not hold more API-key-looking tokens than its input";
  info.create = factory_of<NoNewSecrets>();
  registrar.add_checker(std::move(info));
}

}  // namespace

COMPACTOR_PLUGIN("no_new_secrets", "1.0.0", "checker:no_new_secrets", register_plugin)
