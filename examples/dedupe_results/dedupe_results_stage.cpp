// dedupe_results: an older tool result whose content is byte-identical to a newer one's (the agent
// read the same file twice) is archived, then replaced by a short marker naming the newer result's
// tool_use_id and the receipt. Results in the protected tail are never touched; the newest copy
// always stays.
#include "compactor/archive.hpp"
#include "compactor/message_edit.hpp"
#include "compactor/plugin.hpp"

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
    bool changed = false;
    for (std::size_t i = committed.size(); i-- > 0;) {
      const Message& m = committed[i];
      if (!m.has_tool_result()) continue;
      std::vector<std::pair<std::size_t, boost::json::value>> replacements;
      for (std::size_t b = 0; b < m.blocks().size(); ++b) {
        const Block& block = m.blocks()[b];
        if (block.kind() != BlockKind::tool_result) continue;
        std::string_view bytes = raw_block_field(m, b, "content");
        if (bytes.empty() || result_content_chars(block) < min_chars_) continue;
        auto [it, first] = newest_id.emplace(bytes, block.tool_use_id());
        if (first || context.tail.contains(i)) continue;
        auto receipt = context.archive.put(bytes);  // archive first, then replace
        if (!receipt) return StageResult::decline(receipt.error().message);
        replacements.emplace_back(b, boost::json::string("[dedupe: same as the result of " + std::string(it->second) +
                                                         "; archived as " + *receipt + "]"));
      }
      if (replacements.empty()) continue;
      auto edited = with_result_contents(m, std::move(replacements));
      if (!edited) return StageResult::decline(edited.error().message);
      messages[i] = std::move(edited).value();
      changed = true;
    }
    if (!changed) return StageResult::nothing_to_do("no older result repeats a newer one");
    return StageResult::candidate(std::move(messages));
  }

 private:
  std::uint64_t min_chars_;
};

void register_plugin(PluginRegistrar& registrar) {
  StageInfo info;
  info.name = "dedupe_results";
  info.description = "replaces an older tool result identical to a newer one with a marker (archived first)";
  info.params = {ParamSpec::integer("min_chars", "results shorter than this are left alone", 200).at_least(0)};
  info.create = factory_of<DedupeResults>();
  registrar.add_stage(std::move(info));
}

}  // namespace

COMPACTOR_PLUGIN("dedupe_results", "1.0.0", "stage:dedupe_results", register_plugin)
