// pairs_unchanged: a kept pair is unchanged except the tool_result's content — the tool_use's id,
// name and input and the result's tool_use_id and is_error stay. Only messages the stage
// replaced are looked at.
#include "checkers/checker_support.hpp"
#include "checkers/checker_host.hpp"

#include <unordered_map>

namespace compactor::detail {
namespace {

class PairsUnchangedChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    if (same_messages(in)) return;
    MessageIdentity kept(in.before);
    std::unordered_map<std::string_view, Block> uses, results;
    bool indexed = false;
    auto index_before = [&] {
      for (const MessagePtr& m : in.before.messages())
        for (const Block& b : m->blocks()) {
          if (b.kind() == BlockKind::tool_use) uses.emplace(b.id(), b);
          if (b.kind() == BlockKind::tool_result) results.emplace(b.tool_use_id(), b);
        }
      indexed = true;
    };
    const Conversation& c = in.candidate;
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (kept.contains(c.messages()[i].get())) continue;
      if (!indexed) index_before();
      for (const Block& b : c[i].blocks()) {
        if (b.kind() == BlockKind::tool_use) {
          auto it = uses.find(b.id());
          if (it == uses.end()) continue;
          std::string id(b.id());
          if (b.name() != it->second.name())
            out.push_back(violation(name(), i, "tool_use " + id + " changed its name from \"" + std::string(it->second.name()) +
                                                   "\" to \"" + std::string(b.name()) + "\"", {id}));
          const boost::json::value* now = b.input();
          const boost::json::value* was = it->second.input();
          if ((now == nullptr) != (was == nullptr) || (now != nullptr && *now != *was))
            out.push_back(violation(name(), i, "tool_use " + id + " changed its input", {id}));
        } else if (b.kind() == BlockKind::tool_result) {
          auto it = results.find(b.tool_use_id());
          if (it == results.end()) continue;
          if (b.is_error() != it->second.is_error()) {
            std::string id(b.tool_use_id());
            out.push_back(violation(name(), i, "tool_result for " + id + " changed is_error from " +
                                                   (it->second.is_error() ? "true" : "false") + " to " +
                                                   (b.is_error() ? "true" : "false"), {id}));
          }
        }
      }
    }
  }
};

}  // namespace

std::unique_ptr<Checker> make_pairs_unchanged_checker() { return CheckerHost::named(std::make_unique<PairsUnchangedChecker>(), "pairs_unchanged"); }

}  // namespace compactor::detail
