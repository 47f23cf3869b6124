// A summarizer backend (`summarizer: {kind: <its name>, max_lines: 2}`): the summary is the
// first line of each of the first `max_lines` texts the user wrote, quoted. Deterministic and
// offline, like the built-in extractive one; it never reads tool output.
#include "compactor/plugin.hpp"

#include <string>

namespace {

using namespace compactor;

class FirstLines final : public Summarizer {
 public:
  explicit FirstLines(const ParamValues& params) : max_lines_(static_cast<std::size_t>(params.integer("max_lines"))) {}

  Expected<Summary> summarize(const SummaryRequest& request) override {
    std::string text;
    std::size_t lines = 0;
    for (std::size_t i = 0; i < request.end && lines < max_lines_; ++i) {
      const Message& m = request.conversation[i];
      if (m.role() != Role::user || m.has_tool_result()) continue;
      std::string first = m.text().substr(0, m.text().find('\n'));
      if (first.empty()) continue;
      text += (text.empty() ? "" : "\n") + std::string("The user wrote: ") + first;
      ++lines;
    }
    if (text.empty()) return Error{"no user text to summarize"};
    // At most max_chars code points, never cutting one in two.
    std::size_t at = 0;
    for (std::size_t chars = 0; at < text.size() && chars < request.max_chars; ++chars)
      do ++at;
      while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80);
    text.resize(at);
    return Summary{text, false};
  }

 private:
  std::size_t max_lines_;
};

SummarizerInfo summarizer_info() {
  SummarizerInfo info;
  info.description = "the first line of each of the first user texts";
  info.params = {ParamSpec::integer("max_lines", "how many user texts the summary quotes", 3).at_least(1)};
  info.create = factory_of<FirstLines>();
  return info;
}

}  // namespace

COMPACTOR_SUMMARIZER("first_lines", "1.0.0", summarizer_info)
