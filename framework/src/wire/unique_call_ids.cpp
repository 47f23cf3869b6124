#include "wire/unique_call_ids.hpp"
#include "checkers/checker_host.hpp"

#include <string>
#include <unordered_map>

namespace compactor::wire {
namespace {

class UniqueCallIdsChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& c = in.candidate;
    std::unordered_map<std::string_view, std::size_t> seen;
    for (std::size_t i = 0; i < c.size(); ++i)
      for (const Block& b : c[i].blocks()) {
        if (b.kind() != BlockKind::tool_use) continue;
        Violation v;
        v.checker = std::string(name());
        v.message_index = i;
        if (!b.has_id() || b.id().empty()) {
          v.what = "a tool call has no id";
          out.push_back(std::move(v));
          continue;
        }
        auto [it, inserted] = seen.emplace(b.id(), i);
        if (inserted) continue;
        v.what = "tool call id " + std::string(b.id()) + " is already used at messages." + std::to_string(it->second);
        v.ids = {std::string(b.id())};
        out.push_back(std::move(v));
      }
  }
};

}  // namespace

CheckerPtr make_unique_call_ids_checker() { return CheckerHost::named(std::make_unique<UniqueCallIdsChecker>(), "unique_call_ids"); }

}  // namespace compactor::wire
