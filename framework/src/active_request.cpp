#include "compactor/active_request.hpp"

#include "compactor/summary_compaction.hpp"

#include <array>

namespace compactor {

bool is_runtime_text(std::string_view text) {
  std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return true;
  text.remove_prefix(start);
  // "[compactor " starts every marker a Compactor stage writes: never the user's request.
  static constexpr std::array<std::string_view, 11> kPrefixes = {
      "[compactor ",
      "<command-name>",     "<command-message>",     "<command-args>",         "<local-command-stdout>",
      "<local-command-stderr>", "<local-command-caveat>", "<system-reminder>", "<bash-input>",
      "<bash-stdout>",      "[Request interrupted by user",
  };
  for (std::string_view p : kPrefixes)
    if (text.substr(0, p.size()) == p) return true;
  return false;
}

ActiveRequest find_active_request(const Conversation& conversation) {
  for (std::size_t i = conversation.size(); i > 0; --i) {
    const Message& m = conversation[i - 1];
    if (m.role() != Role::user) continue;
    const auto& blocks = m.blocks();
    for (std::size_t b = blocks.size(); b > 0; --b) {
      const Block& block = blocks[b - 1];
      if (block.kind() == BlockKind::text && !is_runtime_text(block.text()))
        return ActiveRequest{std::string(block.text()), i - 1};
    }
  }
  // No user text since the history was summarized: the summary quotes the request verbatim.
  if (!conversation.empty()) {
    SummaryState state = read_summary_state(conversation);
    if (!state.request.empty()) return ActiveRequest{state.request, 0};
  }
  return {};
}

}  // namespace compactor
