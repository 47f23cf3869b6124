// arrival: each new tool result is shaped the first time it is sent, before any prompt cache holds
// it, so shaping it never breaks a cache later. The new results are those of a final user message
// (the model has not seen them). By the tool that made it (the `shorten` and `never` lists: each
// agent's tool names, compactor/tool_calls.hpp):
//   - an output identical to that of an earlier call of the same tool with the same input becomes
//     a reference to it: `[compactor: the same output as the Bash call of messages.12, 812 chars:
//     sha256:…]`;
//   - a result of a `shorten` tool over `max_chars` keeps its first `head_chars` and last
//     `tail_chars` around a receipt marker saying how much was left out;
//   - a `never` tool's result is never touched (an edit's confirmation, a plan).
// Reads are not shortened by default: an agent's next Edit quotes their exact text. Every original
// is archived before its marker is committed (the archived checker verifies it).
#include "compactor/archive.hpp"
#include "compactor/message_edit.hpp"
#include "compactor/plugin.hpp"
#include "compactor/tool_calls.hpp"

#include <fmt/core.h>

#include <optional>

namespace {

using namespace compactor;

// The byte offset after `n` code points of `text` (its size when shorter).
std::size_t code_points_end(std::string_view text, std::size_t n) {
  std::size_t at = 0;
  for (std::size_t seen = 0; at < text.size() && seen < n; ++seen) {
    ++at;
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  }
  return at;
}

// The byte offset where the last `n` code points of `text` start.
std::size_t last_code_points_start(std::string_view text, std::size_t n) {
  std::size_t at = text.size();
  for (std::size_t seen = 0; at > 0 && seen < n; ++seen) {
    --at;
    while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
  }
  return at;
}

// The tool_use a result answers: in the message before the result's (the pairing rule).
const Block* call_of(const Conversation& c, std::size_t message, std::string_view id) {
  if (message == 0) return nullptr;
  for (const Block& b : c[message - 1].blocks())
    if (b.kind() == BlockKind::tool_use && b.id() == id) return &b;
  return nullptr;
}

// The message of an earlier call of the same tool with the same input whose result's content has
// the same bytes as `content`; nothing when none.
std::optional<std::size_t> earlier_same_output(const Conversation& c, std::size_t before, const Block& call, std::string_view content) {
  for (std::size_t i = before; i-- > 1;) {
    if (c[i].role() != Role::user) continue;
    const auto& blocks = c[i].blocks();
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      if (blocks[k].kind() != BlockKind::tool_result) continue;
      const Block* earlier = call_of(c, i, blocks[k].tool_use_id());
      if (earlier == nullptr || earlier->name() != call.name() || earlier->input() == nullptr || call.input() == nullptr ||
          *earlier->input() != *call.input())
        continue;
      if (raw_block_field(c[i], k, "content") == content) return i;
    }
  }
  return std::nullopt;
}

class ArrivalStage final : public Stage {
 public:
  explicit ArrivalStage(const ParamValues& p)
      : shorten_(p.string("shorten")),
        never_(p.string("never")),
        max_chars_(static_cast<std::uint64_t>(p.integer("max_chars"))),
        head_(static_cast<std::size_t>(p.integer("head_chars"))),
        tail_(static_cast<std::size_t>(p.integer("tail_chars"))),
        same_output_(p.boolean("same_output")) {}

  StageResult run(const Conversation& committed, const StageContext& context) override {
    if (committed.size() < 2) return StageResult::nothing_to_do();
    const std::size_t last = committed.size() - 1;
    const Message& message = committed[last];
    if (message.role() != Role::user || !message.has_tool_result()) return StageResult::nothing_to_do();
    std::vector<std::pair<std::size_t, boost::json::value>> replacements;
    std::size_t same = 0, shortened = 0;
    for (std::size_t k = 0; k < message.blocks().size(); ++k) {
      const Block& result = message.blocks()[k];
      if (result.kind() != BlockKind::tool_result) continue;
      const Block* call = call_of(committed, last, result.tool_use_id());
      if (call == nullptr || never_.contains(call->name())) continue;
      const std::string_view raw = raw_block_field(message, k, "content");
      const std::uint64_t chars = result_content_chars(result);
      std::optional<std::string> marker;
      if (same_output_ && chars > kReferenceChars)
        if (auto earlier = earlier_same_output(committed, last, *call, raw)) {
          auto receipt = context.archive.put(raw);
          if (!receipt) return StageResult::decline(receipt.error().message);
          marker = fmt::format("[compactor: the same output as the {} call of messages.{}, {} chars: {}]", call->name(), *earlier, chars, *receipt);
          ++same;
        }
      if (!marker && shorten_.contains(call->name()) && chars > max_chars_ && result.content() != nullptr &&
          result.content()->is_string()) {
        marker = shortened_text(result.content()->get_string(), raw, chars, call->name(), context);
        if (!marker) return StageResult::decline(error_);
        if (count_code_points(*marker) >= chars) marker.reset();  // head and tail leave nothing out worth a marker
        else ++shortened;
      }
      if (marker) replacements.emplace_back(k, boost::json::value(std::move(*marker)));
    }
    if (replacements.empty()) return StageResult::nothing_to_do();
    auto edited = with_result_contents(message, std::move(replacements));
    if (!edited) return StageResult::decline("cannot edit messages." + std::to_string(last) + ": " + edited.error().message);
    std::vector<MessagePtr> messages = committed.messages();
    messages[last] = std::move(edited).value();
    context.log.info(fmt::format("shaped {} new result(s): {} shortened, {} the same as an earlier output", same + shortened,
                                 shortened, same));
    return StageResult::candidate(committed.with_messages(std::move(messages)));
  }

 private:
  // A reference is shorter than any output over this.
  static constexpr std::uint64_t kReferenceChars = 200;

  // The head, a receipt marker, the tail; nothing (error_ set) when the archive refused the original.
  std::optional<std::string> shortened_text(std::string_view text, std::string_view raw, std::uint64_t chars, std::string_view tool,
                                            const StageContext& context) {
    auto receipt = context.archive.put(raw);
    if (!receipt) {
      error_ = receipt.error().message;
      return std::nullopt;
    }
    const std::size_t head = code_points_end(text, head_), tail = std::max(head, last_code_points_start(text, tail_));
    const std::uint64_t left_out = chars - count_code_points(text.substr(0, head)) - count_code_points(text.substr(tail));
    return fmt::format("{}\n[compactor shortened this {} result: {} of its {} chars left out here; {} gives it whole]\n{}",
                       text.substr(0, head), tool, left_out, chars, context.how_to_restore(*receipt), text.substr(tail));
  }

  ToolNames shorten_, never_;
  std::uint64_t max_chars_;
  std::size_t head_, tail_;
  bool same_output_;
  std::string error_;
};

StageInfo stage_info() {
  StageInfo info;
  info.description = "shapes each new tool result the first time it is sent: shortened by its tool's policy, or a reference to the same earlier output";
  info.params = {
      ParamSpec::string("shorten", "tools whose results over max_chars keep only their head and tail (space-separated; a trailing * matches a prefix)",
                        "Bash BashOutput Grep Glob LS WebSearch WebFetch shell shell_command exec_command write_stdin local_shell "
                        "run_shell_command grep_search search_file_content glob list_directory web_fetch google_web_search mcp__*"),
      ParamSpec::string("never", "tools whose results are never touched",
                        "Edit MultiEdit Write NotebookEdit TodoWrite apply_patch update_plan replace edit write_file write_todos todo_write save_memory"),
      ParamSpec::integer("max_chars", "a result of a shorten tool over this many chars is shortened", 4000).at_least(1),
      ParamSpec::integer("head_chars", "chars kept from its start", 1500).at_least(0),
      ParamSpec::integer("tail_chars", "chars kept from its end", 1500).at_least(0),
      ParamSpec::boolean("same_output", "an output identical to an earlier call's of the same tool and input becomes a reference to it", true),
  };
  info.may_touch_tail = true;  // the new results are the protected newest exchange's
  // A shortened result is over max_chars; a reference's output repeats an earlier one's bytes.
  info.acts_when = {{StageTrigger::Kind::new_result_over, "max_chars"}, {StageTrigger::Kind::new_result_repeated, "same_output"}};
  info.create = factory_of<ArrivalStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("arrival", "0.1.0", stage_info)
