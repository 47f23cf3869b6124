// recent_intact: the protected tail stays verbatim. A stage that declares it may touch the tail
// may only replace tool_result content there (with a receipt marker; the archived checker
// verifies the receipt).
#include "checkers/checker_support.hpp"
#include "checkers/checker_host.hpp"

namespace compactor::detail {
namespace {

// Equal but for the content of tool_result blocks.
bool equal_but_result_content(const Message& a, const Message& b) {
  if (a.role() != b.role() || a.blocks().size() != b.blocks().size()) return false;
  const auto& ao = a.json();
  const auto& bo = b.json();
  if (ao.size() != bo.size()) return false;
  for (const auto& kv : ao)
    if (kv.key() != "content" && (!bo.contains(kv.key()) || bo.at(kv.key()) != kv.value())) return false;
  for (std::size_t k = 0; k < a.blocks().size(); ++k) {
    const Block& x = a.blocks()[k];
    const Block& y = b.blocks()[k];
    if (x.kind() != y.kind()) return false;
    if (x.json() == nullptr || y.json() == nullptr) {
      if (x.text() != y.text()) return false;
      continue;
    }
    if (x.kind() != BlockKind::tool_result) {
      if (*x.json() != *y.json()) return false;
      continue;
    }
    const auto& xo = *x.json();
    const auto& yo = *y.json();
    for (const auto& kv : xo)
      if (kv.key() != "content" && (!yo.contains(kv.key()) || yo.at(kv.key()) != kv.value())) return false;
    for (const auto& kv : yo)
      if (kv.key() != "content" && !xo.contains(kv.key())) return false;
  }
  return true;
}

class RecentIntactChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    if (same_messages(in)) return;
    std::size_t length = in.tail.length(in.before);
    if (length == 0) return;
    const Conversation& c = in.candidate;
    std::string where = " (the last " + std::to_string(in.tail.exchanges) + " exchange(s), input messages." +
                        std::to_string(in.tail.begin) + " onwards)";
    if (c.size() < length) {
      Violation v;
      v.checker = std::string(name());
      v.what = "the candidate has " + std::to_string(c.size()) + " messages, fewer than the protected tail's " +
               std::to_string(length) + where;
      out.push_back(std::move(v));
      return;
    }
    std::size_t offset = c.size() - length;
    for (std::size_t k = 0; k < length; ++k) {
      const MessagePtr& now = c.messages()[offset + k];
      const MessagePtr& was = in.before.messages()[in.tail.begin + k];
      if (now == was || now->json() == was->json()) continue;
      if (in.may_touch_tail && equal_but_result_content(*was, *now)) continue;
      out.push_back(violation(name(), offset + k, "a message of the protected tail was modified" + where));
    }
  }
};

}  // namespace

std::unique_ptr<Checker> make_recent_intact_checker() { return CheckerHost::named(std::make_unique<RecentIntactChecker>(), "recent_intact"); }

}  // namespace compactor::detail
