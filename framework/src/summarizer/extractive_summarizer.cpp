#include "compactor/active_request.hpp"
#include "compactor/summarizer.hpp"

#include <fmt/core.h>

#include <map>
#include <set>
#include <unordered_map>

namespace compactor {
namespace {

// The first `n` code points of `text` on one line, with "…" when cut.
std::string clip(std::string_view text, std::size_t n) {
  std::string flat;
  for (char c : text) flat += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  std::size_t i = 0, seen = 0;
  while (i < flat.size() && seen < n) {
    ++seen;
    ++i;
    while (i < flat.size() && (static_cast<unsigned char>(flat[i]) & 0xC0) == 0x80) ++i;
  }
  if (i >= flat.size()) return flat;
  return flat.substr(0, i) + "…";
}

bool path_like_key(std::string_view key) {
  return key == "path" || key == "file_path" || key == "filePath" || key == "notebook_path" || key == "file" ||
         key == "filename" || key == "directory" || key == "cwd";
}

class ExtractiveSummarizer final : public Summarizer {
 public:
  Expected<Summary> summarize(const SummaryRequest& r) override {
    const Conversation& c = r.conversation;
    std::string goal;
    std::vector<std::string> paths;
    std::set<std::string> seen_paths;
    std::map<std::string, std::pair<int, int>> tools;  // name → (runs, failed)
    std::unordered_map<std::string, std::string> tool_of;
    std::string last_state;
    for (std::size_t i = 0; i < r.end && i < c.size(); ++i) {
      const Message& m = c[i];
      for (const Block& b : m.blocks()) {
        if (m.role() == Role::user && b.kind() == BlockKind::text && goal.empty() && !is_runtime_text(b.text()))
          goal = std::string(b.text());
        if (m.role() == Role::assistant && b.kind() == BlockKind::text && !b.text().empty()) last_state = std::string(b.text());
        if (b.kind() == BlockKind::tool_use) {
          std::string name(b.name());
          tool_of[std::string(b.id())] = name;
          ++tools[name].first;
          if (const auto* input = b.input(); input != nullptr && input->is_object())
            for (const auto& kv : input->get_object())
              if (path_like_key(kv.key()) && kv.value().is_string()) {
                std::string p(kv.value().get_string());
                if (seen_paths.insert(p).second) paths.push_back(p);
              }
        }
        if (b.kind() == BlockKind::tool_result && b.is_error()) {
          auto it = tool_of.find(std::string(b.tool_use_id()));
          if (it != tool_of.end()) ++tools[it->second].second;
        }
      }
    }
    // Build the sections, then shrink the lists until the whole fits max_chars.
    for (std::size_t list_limit = 12;; list_limit = list_limit > 1 ? list_limit / 2 : 0) {
      std::string out = "Goal: " + (goal.empty() ? std::string("(no user request found)") : clip(goal, 200)) + "\n";
      std::string files;
      for (std::size_t k = 0; k < paths.size() && k < list_limit; ++k) files += (k ? ", " : "") + clip(paths[k], 80);
      if (paths.size() > list_limit) files += fmt::format("{}(+{} more)", list_limit ? " " : "", paths.size() - list_limit);
      out += "Files and paths: " + (paths.empty() ? std::string("none") : files) + "\n";
      std::string run;
      std::size_t k = 0;
      for (const auto& [name, counts] : tools) {
        if (k++ >= list_limit) {
          run += fmt::format(" (+{} more tools)", tools.size() - list_limit);
          break;
        }
        run += fmt::format("{}{} ×{}", run.empty() ? "" : ", ", clip(name, 40), counts.first);
        if (counts.second) run += fmt::format(" ({} failed)", counts.second);
      }
      out += "Tools run: " + (tools.empty() ? std::string("none") : run) + "\n";
      out += "Last state: " + (last_state.empty() ? std::string("(no assistant text)") : clip(last_state, 300));
      if (count_code_points(out) <= r.max_chars || list_limit == 0) {
        if (count_code_points(out) > r.max_chars) out = clip(out, r.max_chars > 1 ? r.max_chars - 1 : 0);
        return Summary{out, false};
      }
    }
  }
};

}  // namespace

std::unique_ptr<Summarizer> make_extractive_summarizer() { return std::make_unique<ExtractiveSummarizer>(); }

}  // namespace compactor
