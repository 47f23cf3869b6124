#include "host/archived_receipts.hpp"

#include "checkers/checker_support.hpp"

#include "compactor/message_edit.hpp"
#include "compactor/summary_format.hpp"

#include <algorithm>
#include <unordered_map>

namespace compactor {
namespace {

// The text a tool result shows: its string, or its text blocks.
std::string_view shown_text(const Block& result) {
  const boost::json::value* content = result.content();
  if (content != nullptr && content->is_string()) return content->get_string();
  if (content != nullptr && content->is_array())
    for (const auto& part : content->get_array())
      if (const auto* o = part.if_object(); o != nullptr && o->contains("text") && o->at("text").is_string())
        return o->at("text").get_string();
  return {};
}

// Whether `now` (a result's new content) keeps a preview of `was` (its content before): its start.
bool keeps_preview(const Block& was, const Block& now) {
  std::string_view before = shown_text(was);
  if (before.empty()) return false;
  return shown_text(now).find(before.substr(0, std::min<std::size_t>(before.size(), 64))) != std::string_view::npos;
}

class Kinds {
 public:
  explicit Kinds(const Conversation& before) : before_(before) {}

  // The kinds the receipts that message `m` (new in the stage's output) names.
  void read(const MessagePtr& message) {
    const Message& m = *message;
    if (read_summary_state(Conversation::from_messages({message})).count > 0) {
      name_all(m.raw(), "summary_snapshot");
      return;
    }
    for (std::size_t b = 0; b < m.blocks().size(); ++b) {
      const Block& block = m.blocks()[b];
      if (block.kind() != BlockKind::tool_result) continue;
      const Block* was = result_before(block.tool_use_id());
      const char* kind = was != nullptr && keeps_preview(*was, block) ? "persisted_output" : "tool_result";
      name_all(raw_block_field(m, b, "content"), kind);
    }
    name_all(m.raw(), "messages");  // what no result content named: a marker for messages
  }
  std::string kind_of(const std::string& receipt) const {
    auto it = kinds_.find(receipt);
    return it == kinds_.end() ? "unnamed" : it->second;
  }

 private:
  void name_all(std::string_view text, const char* kind) {
    for (const std::string& r : find_receipts(text)) kinds_.emplace(r, kind);
  }
  const Block* result_before(std::string_view id) {
    if (results_.empty())
      for (const MessagePtr& m : before_.messages())
        for (const Block& b : m->blocks())
          if (b.kind() == BlockKind::tool_result) results_.emplace(std::string(b.tool_use_id()), &b);
    auto it = results_.find(std::string(id));
    return it == results_.end() ? nullptr : it->second;
  }

  const Conversation& before_;
  std::unordered_map<std::string, const Block*> results_;
  std::unordered_map<std::string, std::string> kinds_;
};

}  // namespace

std::vector<ArchivedReceipt> archived_receipts(const std::vector<std::string>& receipts, const Conversation& before,
                                               const Conversation& after, const Archive& archive) {
  std::vector<ArchivedReceipt> out;
  if (receipts.empty()) return out;
  Kinds kinds(before);
  detail::MessageIdentity kept(before);
  for (const MessagePtr& m : after.messages())
    if (!kept.contains(m.get())) kinds.read(m);
  for (const std::string& r : receipts) out.push_back({r, kinds.kind_of(r), archive.size_of(r).value_or(0)});
  return out;
}

}  // namespace compactor
