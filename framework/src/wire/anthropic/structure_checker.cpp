// structure: what the API requires of the message sequence itself.
#include "wire/anthropic/messages_rules.hpp"

#include "checkers/block_members.hpp"
#include "checkers/checker_support.hpp"
#include "checkers/checker_host.hpp"
#include "model/conversation_host.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <optional>

namespace compactor::detail {
namespace {

// A member the API refuses in block `k` of message `i` (and in the blocks of a tool result's
// content), named as the API names it.
void refused_members(const boost::json::object& block, std::size_t i, const std::string& at, std::vector<Violation>& out) {
  const boost::json::value* type = block.if_contains("type");
  if (type == nullptr || !type->is_string()) return;
  const std::string_view kind = type->get_string();
  const std::vector<std::string_view>* members = api_block_members(kind);
  if (members == nullptr) return;
  for (const auto& kv : block)
    if (std::find(members->begin(), members->end(), kv.key()) == members->end())
      out.push_back(violation("structure", i, at + "." + std::string(kind) + "." + std::string(kv.key()) +
                                                  ": Extra inputs are not permitted (rule: " + block_members_rule(kind) + ")"));
  if (kind != "tool_result") return;
  const boost::json::value* content = block.if_contains("content");
  if (content == nullptr || !content->is_array()) return;
  for (std::size_t k = 0; k < content->get_array().size(); ++k)
    if (const boost::json::object* inner = content->get_array()[k].if_object())
      refused_members(*inner, i, at + ".content." + std::to_string(k), out);
}

class StructureChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& c = in.candidate;
    if (c.empty()) {
      Violation v;
      v.checker = "structure";
      v.what = "the conversation has no messages";
      out.push_back(std::move(v));
      return;
    }
    if (c[0].role() != Role::user)
      out.push_back(violation(name(), 0, "the first message must have role \"user\", got \"assistant\""));
    // A message kept from `before` had its blocks read when `before` was checked.
    std::optional<MessageIdentity> kept;
    if (&in.before != &in.candidate) kept.emplace(in.before);
    for (std::size_t i = 0; i < c.size(); ++i) {
      const Message& m = c[i];
      bool empty = m.content_is_string() ? m.blocks().front().text().empty() : m.blocks().empty();
      bool final_assistant = i + 1 == c.size() && m.role() == Role::assistant;
      if (empty && !final_assistant)
        out.push_back(violation(name(), i, "all messages must have non-empty content except for the optional final assistant message"));
      if (!m.content_is_string() && !(kept && kept->contains(c.messages()[i].get())))
        for (std::size_t k = 0; k < m.blocks().size(); ++k)
          if (const boost::json::object* block = m.blocks()[k].json())
            refused_members(*block, i, "content." + std::to_string(k), out);
    }
    // The system entries (kept by the host, not in messages()): each at a valid slot, in order.
    const auto& slots = c.system_slots();
    std::size_t previous = 0;
    for (std::size_t k = 0; k < slots.size(); ++k) {
      std::size_t slot = slots[k];
      std::string which = "system entry " + std::to_string(k + 1) + " of " + std::to_string(slots.size());
      if (slot == Conversation::kUnplaced) {
        Violation v;
        v.checker = "structure";
        v.what = which + " has no valid place left (rule: a system entry follows a user message and is the last "
                 "entry or is followed by an assistant message); it would be lost";
        out.push_back(std::move(v));
        continue;
      }
      // Entries that share a slot are written as one (joined), so only a slot before the
      // previous one breaks the order.
      if (slot < previous || !ConversationHost::valid_system_slot(c.messages(), slot, ConversationHost::layout(c.frame()).entry_placement))
        out.push_back(violation(name(), slot - 1, which + " is misplaced after this message (rule: a system entry follows a user "
                                                  "message, is the last entry or is followed by an assistant message, and "
                                                  "keeps its order)"));
      previous = slot;
    }
  }
};

}  // namespace

std::unique_ptr<Checker> make_structure_checker() { return CheckerHost::named(std::make_unique<StructureChecker>(), "structure"); }

}  // namespace compactor::detail
