#include "model/active_request.hpp"

#include "compactor/summary_format.hpp"

#include <array>

namespace compactor {

bool is_runtime_text(std::string_view text) {
  std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return true;
  text.remove_prefix(start);
  // "[compactor " starts every marker a Compactor stage writes: never the user's request.
  // <task-notification>: Claude Code telling the model a background command ended (68 in the
  // shared corpus), with its own instruction to read the output file after it.
  static constexpr std::array<std::string_view, 12> kPrefixes = {
      "[compactor ",
      "<command-name>",     "<command-message>",     "<command-args>",         "<local-command-stdout>",
      "<local-command-stderr>", "<local-command-caveat>", "<system-reminder>", "<bash-input>",
      "<bash-stdout>",      "[Request interrupted by user", "<task-notification>",
  };
  for (std::string_view p : kPrefixes)
    if (text.substr(0, p.size()) == p) return true;
  return false;
}

bool is_durable_instruction(std::string_view text) {
  std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || text.substr(start, 17) != "<system-reminder>") return false;
  for (std::string_view mark : {"# claudeMd", "CLAUDE.md", "AGENTS.md", "GEMINI.md", "QWEN.md"})
    if (text.find(mark) != std::string_view::npos) return true;
  return false;
}

namespace {

// The newest prompt in messages [0, end), or nullopt; `index` is set to its message.
std::optional<std::string_view> newest_prompt(const Conversation& conversation, std::size_t end, std::size_t& index) {
  for (std::size_t i = end; i > 0; --i) {
    const Message& m = conversation[i - 1];
    if (m.role() != Role::user) continue;
    const auto& blocks = m.blocks();
    for (std::size_t b = blocks.size(); b > 0; --b) {
      const Block& block = blocks[b - 1];
      if (block.kind() == BlockKind::text && !is_runtime_text(block.text())) {
        index = i - 1;
        return block.text();
      }
    }
  }
  return std::nullopt;
}

}  // namespace

ActiveRequest find_active_request(const Conversation& conversation) {
  std::size_t index = 0;
  if (auto newest = newest_prompt(conversation, conversation.size(), index)) {
    ActiveRequest r{std::string(*newest), index, {}};
    if (count_code_points(*newest) < kSubstantiveChars) {
      // Earlier prompts back to the first substantive one; a summary quotes the one it kept.
      std::size_t at = index;
      std::optional<std::string_view> earlier;
      while ((earlier = newest_prompt(conversation, at, at)) && count_code_points(*earlier) < kSubstantiveChars) {}
      if (earlier) {
        r.texts.emplace_back(*earlier);
      } else if (SummaryState state = read_summary_state(conversation); !state.requests.empty()) {
        if (count_code_points(state.requests.front()) >= kSubstantiveChars) r.texts.push_back(state.requests.front());
      }
    }
    r.texts.push_back(r.text);
    return r;
  }
  // No user text since the history was summarized: the summary quotes the requests verbatim.
  if (!conversation.empty()) {
    SummaryState state = read_summary_state(conversation);
    if (!state.requests.empty()) return ActiveRequest{state.requests.back(), 0, state.requests};
  }
  return {};
}

}  // namespace compactor
