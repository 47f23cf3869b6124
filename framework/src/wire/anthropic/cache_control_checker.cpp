// cache_control: a stage never adds a cache breakpoint (a marker never carries cache_control it
// did not inherit), and the number of breakpoints never grows past 4 (the API's limit). Checked
// on its own, a conversation with more than 4 is one the API refuses.
#include "wire/anthropic/messages_rules.hpp"

#include "checkers/checker_support.hpp"
#include "checkers/checker_host.hpp"

namespace compactor::detail {
namespace {

std::size_t breakpoints(const Message& m) {
  std::size_t n = m.json().contains("cache_control") ? 1 : 0;
  for (const Block& b : m.blocks())
    if (b.field("cache_control") != nullptr) ++n;
  return n;
}

class CacheControlChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    std::size_t before = 0, after = 0;
    if (same_messages(in)) {
      for (const MessagePtr& m : in.candidate.messages()) after += breakpoints(*m);
      if (after > 4) {
        Violation v;
        v.checker = std::string(name());
        v.what = "the conversation has " + std::to_string(after) + " cache_control breakpoints; the API allows 4";
        out.push_back(std::move(v));
      }
      return;
    }
    for (const MessagePtr& m : in.before.messages()) before += breakpoints(*m);
    for (const MessagePtr& m : in.candidate.messages()) after += breakpoints(*m);
    if (after > before) {
      Violation v;
      v.checker = std::string(name());
      v.what = "the candidate has " + std::to_string(after) + " cache_control breakpoints, more than its input's " +
               std::to_string(before);
      out.push_back(std::move(v));
    } else if (after > 4) {
      Violation v;
      v.checker = std::string(name());
      v.what = "the candidate has " + std::to_string(after) + " cache_control breakpoints; the API allows 4";
      out.push_back(std::move(v));
    }
  }
};

}  // namespace

std::unique_ptr<Checker> make_cache_control_checker() { return CheckerHost::named(std::make_unique<CacheControlChecker>(), "cache_control"); }

}  // namespace compactor::detail
