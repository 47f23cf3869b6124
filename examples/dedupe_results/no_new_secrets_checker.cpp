// A team's own rule, enabled by its name in `checkers.enabled`, beside the built-in checkers: a
// stage must not put into what we send a secret the history did not already hold there (a summary
// quoting a key from an archived tool result, say). The candidate may hold no more
// API-key-looking tokens than the conversation it came from; what starts a key is its `prefixes`
// param.
#include "compactor/plugin.hpp"

#include <fmt/core.h>

#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace compactor;

class NoNewSecrets final : public Checker {
 public:
  explicit NoNewSecrets(const ParamValues& params) {
    const std::string& list = params.string("prefixes");
    for (std::size_t from = 0; from <= list.size();) {
      std::size_t comma = std::min(list.find(',', from), list.size());
      if (comma > from) prefixes_.push_back(list.substr(from, comma - from));
      from = comma + 1;
    }
  }

  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    std::size_t before = secrets_in(in.before), after = secrets_in(in.candidate);
    if (after > before)
      out.push_back(Violation::of(name(), fmt::format("the candidate holds {} API-key-looking tokens, the conversation it came from {}",
                                                      after, before)));
  }

 private:
  std::size_t secrets_in(const Conversation& c) const {
    std::size_t n = 0;
    for (const MessagePtr& m : c.messages())
      for (const std::string& prefix : prefixes_)
        for (std::size_t at = m->raw().find(prefix); at != std::string_view::npos; at = m->raw().find(prefix, at + 1)) ++n;
    return n;
  }

  std::vector<std::string> prefixes_;
};

CheckerInfo checker_info() {
  CheckerInfo info;
  info.description = "a candidate may not hold more API-key-looking tokens than its input";
  info.params = {ParamSpec::string("prefixes", "what an API key starts with, comma-separated", "sk-ant-,sk-proj-,AKIA,ghp_")};
  info.create = factory_of<NoNewSecrets>();
  return info;
}

}  // namespace

COMPACTOR_CHECKER("no_new_secrets", "1.0.0", checker_info)
