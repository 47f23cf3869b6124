// thinking_unchanged: thinking and redacted_thinking blocks are never modified (the API rejects
// modified ones), nor are the `compaction` blocks the API's own server-side compaction returns
// (the summary that stands for everything before it). They may leave with their whole message
// from old turns, but the last assistant turn of an open tool loop keeps them.
#include "checkers/checker_support.hpp"
#include "checkers/checker_host.hpp"

#include <unordered_map>

namespace compactor::detail {
namespace {

bool is_compaction(const Block& b) { return b.kind() == BlockKind::other && b.type() == "compaction"; }
bool is_thinking(const Block& b) {
  return b.kind() == BlockKind::thinking || b.kind() == BlockKind::redacted_thinking || is_compaction(b);
}

// What identifies a thinking block: its signature, a redacted block's opaque data, a compaction
// block's summary.
std::string_view thinking_key(const Block& b) {
  if (is_compaction(b)) return b.string_field("content");
  return b.kind() == BlockKind::thinking ? b.signature() : b.string_field("data");
}

class ThinkingUnchangedChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    if (same_messages(in)) return;
    MessageIdentity kept(in.before);
    // Built only when a replaced message carries thinking: most candidates never need it.
    std::unordered_map<std::string_view, const boost::json::object*> before_blocks;
    bool indexed = false;
    auto index_before = [&] {
      for (const MessagePtr& m : in.before.messages())
        for (const Block& b : m->blocks())
          if (is_thinking(b)) before_blocks.emplace(thinking_key(b), b.json());
      indexed = true;
    };

    const Conversation& c = in.candidate;
    std::unordered_map<std::string_view, bool> candidate_keys;
    for (std::size_t i = 0; i < c.size(); ++i) {
      bool untouched = kept.contains(c.messages()[i].get());
      for (const Block& b : c[i].blocks()) {
        if (!is_thinking(b)) continue;
        candidate_keys.emplace(thinking_key(b), true);
        if (untouched) continue;
        if (!indexed) index_before();
        auto it = before_blocks.find(thinking_key(b));
        if (it == before_blocks.end() || *it->second != *b.json())
          out.push_back(violation(name(), i, std::string(b.type()) + " block was modified or is not from the input"));
      }
    }
    check_open_loop(in, candidate_keys, out);
  }

 private:
  void check_open_loop(const CheckInput& in, const std::unordered_map<std::string_view, bool>& candidate_keys,
                       std::vector<Violation>& out) const {
    const Conversation& b = in.before;
    if (b.size() < 2 || b[b.size() - 1].role() != Role::user || !b[b.size() - 1].has_tool_result()) return;
    std::size_t i = b.size() - 1;
    while (i > 0 && b[i - 1].role() == Role::user) --i;
    while (i > 0 && b[i - 1].role() == Role::assistant) {
      --i;
      for (const Block& block : b[i].blocks())
        if (is_thinking(block) && candidate_keys.count(thinking_key(block)) == 0) {
          Violation v;
          v.checker = std::string(name());
          v.what = std::string(block.type()) + " block of input messages." + std::to_string(i) +
                   ", the last assistant turn of an open tool loop, was dropped";
          out.push_back(std::move(v));
        }
    }
  }
};

}  // namespace

std::unique_ptr<Checker> make_thinking_unchanged_checker() { return CheckerHost::named(std::make_unique<ThinkingUnchangedChecker>(), "thinking_unchanged"); }

}  // namespace compactor::detail
