#include "model/active_request.hpp"
#include "compactor/summary_compaction.hpp"
#include "compactor/summarizer.hpp"

#include <fmt/core.h>

#include <cstdio>
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

// The line of `summary` that starts with `key`, without it; empty when there is none.
std::string_view line_after(std::string_view summary, std::string_view key) {
  for (std::size_t at = 0; at < summary.size();) {
    std::size_t nl = summary.find('\n', at);
    std::string_view line = summary.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    if (line.substr(0, key.size()) == key) return line.substr(key.size());
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  return {};
}

std::vector<std::string_view> split_list(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) {
    std::size_t sep = list.find(", ");
    std::string_view item = list.substr(0, sep);
    // "(+N more)" counts what an earlier summary could not list; it is not a name.
    if (std::size_t more = item.find("(+"); more != std::string_view::npos) item = item.substr(0, more);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.push_back(item);
    if (sep == std::string_view::npos) break;
    list.remove_prefix(sep + 2);
  }
  return out;
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
    // A rolling summary: what the previous summary (the first message) recorded comes first.
    if (SummaryState previous = read_summary_state(c); previous.count > 0 && r.end > 0) {
      std::string_view s = previous.summary;
      if (std::string_view g = line_after(s, "Goal: "); !g.empty() && g != "(no user request found)") goal = std::string(g);
      if (std::string_view f = line_after(s, "Files and paths: "); f != "none")
        for (std::string_view p : split_list(f))
          if (seen_paths.insert(std::string(p)).second) paths.emplace_back(p);
      if (std::string_view t = line_after(s, "Tools run: "); t != "none")
        for (std::string_view item : split_list(t)) {
          std::size_t times = item.rfind(" ×");
          if (times == std::string_view::npos) continue;
          int runs = 0, failed = 0;
          std::sscanf(std::string(item.substr(times + std::string_view(" ×").size())).c_str(), "%d (%d failed)", &runs, &failed);
          auto& counts = tools[std::string(item.substr(0, times))];
          counts.first += runs;
          counts.second += failed;
        }
      if (std::string_view l = line_after(s, "Last state: "); !l.empty() && l != "(no assistant text)") last_state = std::string(l);
    }
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
    // Lists as long as max_chars allows, from 64 entries down; of the paths, the newest are kept
    // (the working set), the count of the older ones follows them.
    for (std::size_t list_limit = 64;; list_limit = list_limit > 1 ? list_limit / 2 : 0) {
      std::string out = "Goal: " + (goal.empty() ? std::string("(no user request found)") : clip(goal, 200)) + "\n";
      std::string files;
      const std::size_t first = paths.size() > list_limit ? paths.size() - list_limit : 0;
      for (std::size_t k = first; k < paths.size(); ++k) files += (k > first ? ", " : "") + clip(paths[k], 80);
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
