// unique_ids: every tool_use has an id, unique in the conversation, matching the API's pattern
// ^[a-zA-Z0-9_-]+$ (histories carried over from other providers break this).
#include "wire/anthropic/messages_rules.hpp"

#include "checkers/checker_support.hpp"
#include "checkers/checker_host.hpp"

#include <unordered_map>

namespace compactor::detail {
namespace {

bool matches_id_pattern(std::string_view id) {
  if (id.empty()) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

class UniqueIdsChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& c = in.candidate;
    std::unordered_map<std::string_view, std::size_t> seen;
    for (std::size_t i = 0; i < c.size(); ++i) {
      for (const Block& b : c[i].blocks()) {
        if (b.kind() != BlockKind::tool_use && b.kind() != BlockKind::server_tool_use) continue;
        if (!b.has_id()) {
          out.push_back(violation(name(), i, std::string(b.type()) + " has no string \"id\""));
          continue;
        }
        std::string_view id = b.id();
        if (!matches_id_pattern(id)) {
          out.push_back(violation(name(), i, std::string(b.type()) + " id \"" + std::string(id) +
                                                 "\" does not match ^[a-zA-Z0-9_-]+$", {std::string(id)}));
          continue;
        }
        auto [it, inserted] = seen.emplace(id, i);
        if (!inserted)
          out.push_back(violation(name(), i, "tool_use id " + std::string(id) + " is already used at messages." +
                                                 std::to_string(it->second), {std::string(id)}));
      }
    }
  }
};

}  // namespace

std::unique_ptr<Checker> make_unique_ids_checker() { return CheckerHost::named(std::make_unique<UniqueIdsChecker>(), "unique_ids"); }

}  // namespace compactor::detail
