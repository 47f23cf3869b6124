#include "compactor/summary_compaction.hpp"

#include "compactor/summary_format.hpp"
#include "model/active_request.hpp"
#include "summarizer/background_summaries.hpp"


#include <boost/json.hpp>
#include <fmt/core.h>

#include <charconv>
#include <set>

namespace compactor {
ParamSchema summary_params() {
  return {
      ParamSpec::integer("max_chars", "longest summary accepted", 1000).at_least(1),
      ParamSpec::integer("max_summaries",
                         "summaries a history may have, counted in the history (0: no limit; each new one folds the previous)", 0)
          .at_least(0),
  };
}

CompactionPlan plan_from(const ParamValues& p) {
  CompactionPlan plan;
  plan.max_chars = static_cast<std::size_t>(p.integer("max_chars"));
  plan.max_summaries = static_cast<int>(p.integer("max_summaries"));
  return plan;
}

namespace {

// The text blocks of the user messages in [0, end) that hold the agent's durable instructions
// (CLAUDE.md and the like: model/active_request.hpp), each once, as text blocks without their
// cache_control (a summary never adds a cache breakpoint). A previous summary's are among them.
boost::json::array durable_blocks(const Conversation& c, std::size_t begin, std::size_t end) {
  boost::json::array out;
  std::set<std::string_view> seen;
  for (std::size_t i = begin; i < std::min(end, c.size()); ++i) {
    if (c[i].role() != Role::user) continue;
    for (const Block& b : c[i].blocks())
      if (b.kind() == BlockKind::text && is_durable_instruction(b.text()) && seen.insert(b.text()).second)
        out.push_back(boost::json::object{{"type", "text"}, {"text", b.text()}});
  }
  return out;
}

}  // namespace

StageResult compact_with_summary(const Conversation& c, const StageContext& context, const CompactionPlan& plan) {
  SummaryState state = read_summary_state(c);
  std::string unit(to_string(context.budget.unit));
  std::uint64_t size = context.size(c);
  if (plan.max_summaries > 0 && state.count >= plan.max_summaries)
    return StageResult::decline(fmt::format("summary budget exhausted: the history has had {} of its {} summaries",
                                            state.count, plan.max_summaries));
  // The base counts only in the unit it was recorded in (a config may have changed its unit).
  if (state.count > 0 && plan.min_growth > 0 && state.base_unit == unit && size < state.base + plan.min_growth)
    return StageResult::decline(fmt::format(
        "loop guard: the history grew by only {} {} since the last summary ({} needed); not summarizing again",
        size > state.base ? size - state.base : 0, unit, plan.min_growth));
  // Only a first message (the question) before the kept part: there is nothing to summarize.
  if (plan.end <= plan.begin + 1 || plan.end > c.size()) {
    std::uint64_t kept = 0;
    for (std::size_t i = std::min(plan.end, c.size()); i < c.size(); ++i) kept += c.size_of(c[i], context.budget.unit);
    if (kept == 0)
      return StageResult::decline(fmt::format(
          "nothing to summarize: the conversation is its first message alone ({} {}, limit {}), which is the "
          "request and is never shortened",
          size, unit, context.budget.limit));
    if (kept > context.budget.limit)
      return StageResult::decline(fmt::format(
          "the newest exchange alone is {} {} (limit {}) and cannot be summarized without splitting it; shrink it (its "
          "tool input or output)",
          kept, unit, context.budget.limit));
    return StageResult::decline(fmt::format(
        "nothing to summarize: before the newest exchange ({} {}) there is only the first message, which is the request "
        "or the summary so far",
        kept, unit));
  }
  if (context.summarizer == nullptr) return StageResult::decline("no summarizer is configured");

  // 1. The history from the first message summarized goes to the archive before anything is.
  auto receipt = context.archive.put(HashedBlob(c.jsonl_pieces(plan.begin, c.size())));
  if (!receipt) return StageResult::decline(receipt.error().message);

  // 2. The summary, validated before it can reach the history.
  auto summary = context.summarizer->summarize(SummaryRequest{c, plan.end, context.requests, plan.max_chars, plan.begin});
  if (!summary) return StageResult::decline(summary.error().message);
  std::string text = summary->text;
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\t' || text.back() == '\r')) text.pop_back();
  if (text.find_first_not_of(" \n\t\r") == std::string::npos) return StageResult::decline("the summarizer returned an empty summary");
  if (summary->truncated) return StageResult::decline("the summarizer's summary was truncated");
  if (count_code_points(text) > plan.max_chars)
    return StageResult::decline(fmt::format("the summary is {} chars, over max_chars {}", count_code_points(text), plan.max_chars));
  if (text.find("summary>>>") != std::string::npos)
    return StageResult::decline("the summary contains the untrusted block's closing delimiter");

  const std::string stands_in_for = stand_in_key(context.summarizer);

  // 3. The new first message, the durable instructions it replaces after it verbatim, then the
  //    kept messages verbatim.
  std::uint64_t kept = 0;
  for (std::size_t i = plan.end; i < c.size(); ++i) kept += c.size_of(c[i], context.budget.unit);
  const boost::json::array durable = durable_blocks(c, plan.begin, plan.end);
  auto build = [&](std::uint64_t base) {
    boost::json::array content{boost::json::object{
        {"type", "text"},
        {"text", summary_message_text({plan.reactive, context.requests, text, plan.end - plan.begin, *receipt, state.count + 1, unit, base,
                                       context.how_to_restore(*receipt), stands_in_for})}}};
    for (const auto& block : durable) content.push_back(block);
    return Message::from_json(boost::json::object{{"role", "user"}, {"content", std::move(content)}});
  };
  auto first = build(0);
  if (!first) return StageResult::decline("cannot build the summary message: " + first.error().message);
  std::uint64_t after = kept + c.size_of(**first, context.budget.unit) + c.frame().fixed.in(context.budget.unit);
  first = build(after);  // records the size it leaves, for the loop guard (±digits)
  std::vector<MessagePtr> messages;
  messages.reserve(plan.begin + 1 + c.size() - plan.end);
  messages.insert(messages.end(), c.messages().begin(), c.messages().begin() + static_cast<std::ptrdiff_t>(plan.begin));
  messages.push_back(std::move(first).value());
  messages.insert(messages.end(), c.messages().begin() + static_cast<std::ptrdiff_t>(plan.end), c.messages().end());
  Conversation candidate = c.with_messages(std::move(messages));

  std::uint64_t now = context.size(candidate);
  if (now >= size) return StageResult::decline(fmt::format("the summarized history ({} {}) would not be smaller than its input ({})", now, unit, size));
  if (plan.require_fit && now > context.budget.limit)
    return StageResult::decline(fmt::format("the summarized history is still {} {}, over the limit {}", now, unit, context.budget.limit));
  // Said like the other stages' changes: an operator reading the log sees the history folded.
  if (plan.begin == 0)
    context.log.info(fmt::format("summarized the first {} messages ({} {} to {}; the whole history archived as {})", plan.end, size,
                                 unit, now, *receipt));
  else
    context.log.info(fmt::format("summarized messages {} to {} after the {} summaries before them ({} {} to {}; archived as {})",
                                 plan.begin, plan.end - 1, plan.begin, size, unit, now, *receipt));
  return StageResult::candidate(std::move(candidate));
}

}  // namespace compactor
