// budget_persist: when the newest batch of tool results (the results of one assistant turn, which
// arrive together in one user message) is over `max_batch_chars`, its results over `persist_chars`,
// biggest first, are archived and replaced by a marker with the receipt and a preview of the first
// `preview_chars`, until the batch is under the limit (tool_result_budget in the four-step
// reference design whose numbers are the defaults). The batch is usually the newest exchange, so
// this stage declares that it may touch the protected tail, and only ever replaces result content
// with a receipt marker.
#include "compactor/archive.hpp"
#include "compactor/message_edit.hpp"
#include "compactor/plugin.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace {

using namespace compactor;

constexpr std::string_view kMarkerPrefix = "[compactor budget_persist:";

// The first `n` code points of the text a result shows (its string, or its text blocks).
std::string preview(const Block& result, std::size_t n) {
  std::string text;
  const boost::json::value* content = result.content();
  if (content != nullptr && content->is_string()) {
    text = std::string(content->get_string());
  } else if (content != nullptr && content->is_array()) {
    for (const auto& item : content->get_array())
      if (item.is_object() && item.get_object().contains("text") && item.get_object().at("text").is_string())
        text += std::string(item.get_object().at("text").get_string()) + "\n";
  }
  std::size_t i = 0, seen = 0;
  while (i < text.size() && seen < n) {
    ++seen;
    ++i;
    while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
  }
  return text.substr(0, i);
}

class BudgetPersistStage final : public Stage {
 public:
  explicit BudgetPersistStage(const ParamValues& p)
      : max_batch_(static_cast<std::uint64_t>(p.integer("max_batch_chars"))),
        persist_(static_cast<std::uint64_t>(p.integer("persist_chars"))),
        preview_(static_cast<std::size_t>(p.integer("preview_chars"))) {}

  StageResult run(const Conversation& committed, const StageContext& context) override {
    std::size_t index = committed.size();
    while (index > 0 && !committed[index - 1].has_tool_result()) --index;
    if (index == 0) return StageResult::nothing_to_do();
    const Message& batch = committed[--index];

    struct Result {
      std::size_t block;
      std::uint64_t chars;
    };
    std::vector<Result> results;
    std::uint64_t total = 0;
    for (std::size_t b = 0; b < batch.blocks().size(); ++b) {
      if (batch.blocks()[b].kind() != BlockKind::tool_result) continue;
      results.push_back({b, result_content_chars(batch.blocks()[b])});
      total += results.back().chars;
    }
    if (total <= max_batch_) return StageResult::nothing_to_do();
    // Biggest first; equal sizes keep their order, so the result is deterministic.
    std::stable_sort(results.begin(), results.end(), [](const Result& a, const Result& b) { return a.chars > b.chars; });

    std::vector<std::pair<std::size_t, boost::json::value>> contents;
    for (const Result& r : results) {
      if (total <= max_batch_) break;
      if (r.chars <= persist_) continue;
      const Block& block = batch.blocks()[r.block];
      const boost::json::value* content = block.content();
      if (content != nullptr && content->is_string() &&
          std::string_view(content->get_string()).substr(0, kMarkerPrefix.size()) == kMarkerPrefix)
        continue;
      auto receipt = context.archive.put(raw_block_field(batch, r.block, "content"));
      if (!receipt) return StageResult::decline(receipt.error().message);
      std::string marker = fmt::format(
          "{} this tool result ({} chars) was archived as {}; restore it with {}. Its first {} chars follow; the rest is "
          "not shown.]\n{}",
          kMarkerPrefix, r.chars, *receipt, context.how_to_restore(*receipt), preview_, preview(block, preview_));
      total = total - r.chars + count_code_points(marker);
      contents.emplace_back(r.block, boost::json::value(std::move(marker)));
    }
    if (contents.empty()) return StageResult::nothing_to_do();
    std::size_t count = contents.size();
    auto edited = with_result_contents(batch, std::move(contents));
    if (!edited) return StageResult::decline("cannot edit messages." + std::to_string(index) + ": " + edited.error().message);
    std::vector<MessagePtr> messages = committed.messages();
    messages[index] = std::move(edited).value();
    context.log.info(fmt::format("persisted {} result(s) of messages.{}", count, index));
    return StageResult::candidate(committed.with_messages(std::move(messages)));
  }

 private:
  std::uint64_t max_batch_, persist_;
  std::size_t preview_;
};

StageInfo stage_info() {
  StageInfo info;
  info.description = "archives the biggest results of an oversized newest batch, leaving a receipt and a preview";
  info.params = {
      ParamSpec::integer("max_batch_chars", "a batch over this many chars is shrunk", 200000).at_least(1),
      ParamSpec::integer("persist_chars", "only results over this many chars are archived", 30000).at_least(0),
      ParamSpec::integer("preview_chars", "chars of each archived result kept as a preview", 2000).at_least(0),
  };
  info.may_touch_tail = true;
  info.forced = true;  // a batch too large to send: the gate never declines it
  info.acts_when = {{StageTrigger::Kind::newest_batch_over, "max_batch_chars"}};
  info.create = factory_of<BudgetPersistStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("budget_persist", "0.1.0", stage_info)
