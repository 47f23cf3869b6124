// An older tool result whose content is byte-identical to a newer one's (the agent read the same
// file twice) is archived, then replaced by a short marker naming the newer result's tool_use_id
// and the receipt. Results in the protected tail are never touched; the newest copy always stays.
// The oldest marker of a history also says how to get the bytes back, the way the deployment
// gives (StageContext::how_to_restore), unless the history already says it.
#include "compactor/message_edit.hpp"
#include "compactor/plugin.hpp"
#include "compactor/summary_format.hpp"  // restore_told_before

#include <string>
#include <unordered_map>
#include <vector>

namespace {

using namespace compactor;

class DedupeResults final : public Stage {
 public:
  explicit DedupeResults(const ParamValues& params) : min_chars_(static_cast<std::uint64_t>(params.integer("min_chars"))) {}

  StageResult run(const Conversation& committed, const StageContext& context) override {
    // Newest first: the first time a content is seen, it is the newest copy.
    std::unordered_map<std::string_view, std::string_view> newest_id;  // content bytes → tool_use_id
    std::vector<MessagePtr> messages = committed.messages();
    std::size_t oldest = committed.size();
    std::string oldest_receipt;
    for (std::size_t i = committed.size(); i-- > 0;) {
      const Message& m = committed[i];
      if (!m.has_tool_result()) continue;
      std::vector<std::pair<std::size_t, boost::json::value>> replacements;
      for (std::size_t b = m.blocks().size(); b-- > 0;) {  // a later block is a newer result
        const Block& block = m.blocks()[b];
        if (block.kind() != BlockKind::tool_result) continue;
        std::string_view bytes = raw_block_field(m, b, "content");
        if (bytes.empty() || result_content_chars(block) < min_chars_) continue;
        auto [it, first] = newest_id.emplace(bytes, block.tool_use_id());
        if (first || context.tail.contains(i)) continue;
        auto receipt = context.archive.put(bytes);  // archive first, then replace
        if (!receipt) return StageResult::decline(receipt.error().message);
        replacements.emplace_back(b, boost::json::string("[compactor dedupe: same as the result of " + std::string(it->second) +
                                                         "; archived as " + *receipt + "]"));
        oldest = i;
        oldest_receipt = *receipt;
      }
      if (replacements.empty()) continue;
      auto edited = with_result_contents(m, std::move(replacements));
      if (!edited) return StageResult::decline(edited.error().message);
      messages[i] = std::move(edited).value();
    }
    if (oldest == committed.size()) return StageResult::nothing_to_do("no older result repeats a newer one");
    if (!restore_told_before(committed, oldest)) {
      // Said once, after the oldest marker: the marker of its first replaced result gains it.
      const Message& marked = *messages[oldest];
      for (std::size_t b = 0; b < marked.blocks().size(); ++b) {
        const boost::json::value* content = marked.blocks()[b].content();
        if (content == nullptr || !content->is_string() || content->get_string().find(oldest_receipt) == std::string::npos) continue;
        std::string told = std::string(content->get_string()) + " " + context.how_to_restore(oldest_receipt) +
                           " gives it back, and so for every receipt in a marker.";
        auto edited = with_result_contents(marked, {{b, boost::json::string(told)}});
        if (!edited) return StageResult::decline(edited.error().message);
        messages[oldest] = std::move(edited).value();
        break;
      }
    }
    context.log.info("replaced repeated tool results with markers");
    return StageResult::candidate(std::move(messages));
  }

 private:
  std::uint64_t min_chars_;
};

StageInfo stage_info() {
  StageInfo info;
  info.description = "replaces an older tool result identical to a newer one with a marker (archived first)";
  info.params = {ParamSpec::integer("min_chars", "results shorter than this are left alone", 200).at_least(0)};
  info.create = factory_of<DedupeResults>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("dedupe_results", "1.0.0", stage_info)
