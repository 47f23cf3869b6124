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

// The first non-blank line of `text`, trailing blanks cut.
std::string_view first_line_of(std::string_view text) {
  std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return {};
  text.remove_prefix(start);
  text = text.substr(0, text.find('\n'));
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool path_like_key(std::string_view key) {
  return key == "path" || key == "file_path" || key == "filePath" || key == "notebook_path" || key == "file" ||
         key == "filename" || key == "directory" || key == "cwd";
}

// The text of a tool_result's content: a string, or its text blocks joined.
std::string result_text(const Block& b) {
  const boost::json::value* content = b.content();
  if (content == nullptr) return "";
  if (content->is_string()) return std::string(content->get_string());
  std::string out;
  if (content->is_array())
    for (const auto& e : content->get_array())
      if (const auto* o = e.if_object())
        if (const auto* t = o->if_contains("text"); t != nullptr && t->is_string()) out += (out.empty() ? "" : "\n") + std::string(t->get_string());
  return out;
}

// A list that keeps its first occurrence of each item, in order.
struct UniqueList {
  std::vector<std::string> items;
  std::set<std::string> seen;
  void add(std::string item) {
    if (!item.empty() && seen.insert(item).second) items.push_back(std::move(item));
  }
};

// Headers of the summary's sections; a list section's items follow it, one a line, after "- ".
constexpr std::string_view kGoal = "Goal: ", kPrompts = "User prompts:", kPaths = "Files and paths:",
                           kErrors = "Errors (first line of each failed result):", kPlan = "Plan (the latest todo list):",
                           kTools = "Tools run: ", kLast = "Last state: ";

// What a summary records, read from the history and from the summary it rolls up.
struct Facts {
  std::string goal;
  UniqueList prompts, paths, errors;
  std::vector<std::string> plan;  // the newest todo list, as "[status] item"
  std::map<std::string, std::pair<int, int>> tools;  // name → (runs, failed)
  std::string last_state;
};

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

// The "- " items under `header` (up to the next line that is not one); a summary written before
// lists were one item a line gave them on the header's own line, comma-separated.
std::vector<std::string> items_after(std::string_view summary, std::string_view header) {
  std::vector<std::string> out;
  std::size_t at = summary.find(std::string("\n").append(header));
  at = summary.substr(0, header.size()) == header ? 0 : at == std::string_view::npos ? at : at + 1;
  if (at == std::string_view::npos) return out;
  std::size_t nl = summary.find('\n', at);
  std::string_view inline_list = summary.substr(at + header.size(), nl == std::string_view::npos ? std::string_view::npos : nl - at - header.size());
  if (inline_list.starts_with(" ") && inline_list != " none")
    for (std::string_view item : split_list(inline_list.substr(1))) out.emplace_back(item);
  while (nl != std::string_view::npos && summary.substr(nl + 1, 2) == "- ") {
    std::size_t next = summary.find('\n', nl + 1);
    std::string_view item = summary.substr(nl + 3, next == std::string_view::npos ? std::string_view::npos : next - nl - 3);
    // "(+N older …)" counts what an earlier summary could not list; it is not an item.
    if (!item.starts_with("(+")) out.emplace_back(item);
    nl = next;
  }
  return out;
}

// What the previous summary (the history's first message) recorded, carried forward.
void read_previous(std::string_view s, Facts& f) {
  if (std::string_view g = line_after(s, kGoal); !g.empty() && g != "(no user request found)") f.goal = std::string(g);
  for (auto& p : items_after(s, kPrompts)) f.prompts.add(std::move(p));
  for (auto& p : items_after(s, kPaths)) f.paths.add(std::move(p));
  for (auto& e : items_after(s, kErrors)) f.errors.add(std::move(e));
  f.plan = items_after(s, kPlan);
  if (std::string_view t = line_after(s, kTools); t != "none")
    for (std::string_view item : split_list(t)) {
      std::size_t times = item.rfind(" ×");
      if (times == std::string_view::npos) continue;
      int runs = 0, failed = 0;
      std::sscanf(std::string(item.substr(times + std::string_view(" ×").size())).c_str(), "%d (%d failed)", &runs, &failed);
      auto& counts = f.tools[std::string(item.substr(0, times))];
      counts.first += runs;
      counts.second += failed;
    }
  if (std::string_view l = line_after(s, kLast); !l.empty() && l != "(no assistant text)") f.last_state = std::string(l);
}

// A todo list tool's input as "[status] item" lines: Claude Code's TodoWrite {todos: [{content,
// status}]}, Gemini CLI's write_todos {todos: [{description, status}]}, Codex's update_plan
// {plan: [{step, status}]}. Empty when the input is none of them.
std::vector<std::string> todo_list(const boost::json::value* input) {
  std::vector<std::string> out;
  const boost::json::object* o = input != nullptr ? input->if_object() : nullptr;
  if (o == nullptr) return out;
  const boost::json::value* list = o->if_contains("todos");
  if (list == nullptr) list = o->if_contains("plan");
  if (list == nullptr || !list->is_array()) return out;
  for (const auto& item : list->get_array()) {
    const boost::json::object* t = item.if_object();
    if (t == nullptr) continue;
    std::string text, status;
    for (const char* key : {"content", "description", "step"})
      if (const auto* v = t->if_contains(key); v != nullptr && v->is_string() && text.empty()) text = std::string(v->get_string());
    if (const auto* v = t->if_contains("status"); v != nullptr && v->is_string()) status = std::string(v->get_string());
    if (!text.empty()) out.push_back("[" + (status.empty() ? std::string("?") : status) + "] " + clip(text, 200));
  }
  return out;
}

// A tool call: its name counted, its paths and todo list kept.
void read_call(const Block& b, Facts& f, std::unordered_map<std::string, std::string>& tool_of) {
  std::string name(b.name());
  tool_of[std::string(b.id())] = name;
  ++f.tools[name].first;
  const auto* input = b.input();
  if (input == nullptr || !input->is_object()) return;
  for (const auto& kv : input->get_object())
    if (path_like_key(kv.key()) && kv.value().is_string()) f.paths.add(clip(kv.value().get_string(), 300));
  if (auto plan = todo_list(input); !plan.empty()) f.plan = std::move(plan);
}

void read_history(const SummaryRequest& r, Facts& f) {
  const Conversation& c = r.conversation;
  std::unordered_map<std::string, std::string> tool_of;
  for (std::size_t i = r.begin; i < r.end && i < c.size(); ++i) {
    const Message& m = c[i];
    for (const Block& b : m.blocks()) {
      if (m.role() == Role::user && b.kind() == BlockKind::text && !is_runtime_text(b.text())) {
        if (f.goal.empty()) f.goal = std::string(b.text());
        f.prompts.add(clip(b.text(), 500));
      }
      if (m.role() == Role::assistant && b.kind() == BlockKind::text && !b.text().empty()) f.last_state = std::string(b.text());
      if (b.kind() == BlockKind::tool_use) read_call(b, f, tool_of);
      if (b.kind() == BlockKind::tool_result && b.is_error()) {
        auto it = tool_of.find(std::string(b.tool_use_id()));
        if (it != tool_of.end()) ++f.tools[it->second].second;
        const std::string text = result_text(b);
        if (std::string_view line = first_line_of(text); !line.empty() && !line.starts_with("[compactor ")) f.errors.add(clip(line, 500));
      }
    }
  }
}

// A list section with at most `limit` items, the newest kept, the count of the older ones said.
std::string section(std::string_view header, const std::vector<std::string>& items, std::size_t limit) {
  if (items.empty()) return std::string(header) + " none\n";
  std::string out = std::string(header) + "\n";
  const std::size_t first = items.size() > limit ? items.size() - limit : 0;
  if (first > 0) out += fmt::format("- (+{} older, in the archived history)\n", first);
  for (std::size_t k = first; k < items.size(); ++k) out += "- " + items[k] + "\n";
  return out;
}

// The summary with at most these many prompts, and paths and errors each.
std::string render(const Facts& f, std::size_t prompts, std::size_t facts, std::size_t tools) {
  std::string out = std::string(kGoal) + (f.goal.empty() ? std::string("(no user request found)") : clip(f.goal, 200)) + "\n";
  out += section(kPrompts, f.prompts.items, prompts);
  out += section(kPaths, f.paths.items, facts);
  out += section(kErrors, f.errors.items, facts);
  out += section(kPlan, f.plan, 64);
  std::string run;
  std::size_t k = 0;
  for (const auto& [name, counts] : f.tools) {
    if (k++ >= tools) {
      run += fmt::format(" (+{} more tools)", f.tools.size() - tools);
      break;
    }
    run += fmt::format("{}{} ×{}", run.empty() ? "" : ", ", clip(name, 40), counts.first);
    if (counts.second) run += fmt::format(" ({} failed)", counts.second);
  }
  out += std::string(kTools) + (f.tools.empty() ? std::string("none") : run) + "\n";
  out += std::string(kLast) + (f.last_state.empty() ? std::string("(no assistant text)") : clip(f.last_state, 300));
  return out;
}

// The extractive summary keeps what an agent must not discover again: every file path its tools
// touched, the first line of every error, the user's prompts, the latest plan; from the history
// and from the summary it rolls up. When that is over max_chars the oldest prompts go first, then
// the oldest paths and errors (all of them stay in the archived history).
class ExtractiveSummarizer final : public Summarizer {
 public:
  Expected<Summary> summarize(const SummaryRequest& r) override {
    Facts f;
    // Rolling up (begin 0): every summary it folds, oldest first; appending: none (they stay).
    if (r.begin == 0 && r.end > 0)
      for (std::size_t i = 0, n = leading_summaries(r.conversation); i < n; ++i) read_previous(read_summary_state(r.conversation, i).summary, f);
    read_history(r, f);
    const std::size_t all = std::max({f.prompts.items.size(), f.paths.items.size(), f.errors.items.size(), f.tools.size(), std::size_t{1}});
    for (std::size_t prompts = all;; prompts /= 2) {
      std::string out = render(f, prompts, all, all);
      if (count_code_points(out) <= r.max_chars) return Summary{out, false};
      if (prompts > 1) continue;
      for (std::size_t facts = all;; facts = facts > 1 ? facts / 2 : 0) {
        out = render(f, 1, facts, std::min<std::size_t>(facts, 64));
        if (count_code_points(out) <= r.max_chars || facts == 0) {
          if (count_code_points(out) > r.max_chars) out = clip(out, r.max_chars > 1 ? r.max_chars - 1 : 0);
          return Summary{out, false};
        }
      }
    }
  }
};

}  // namespace

std::unique_ptr<Summarizer> make_extractive_summarizer() { return std::make_unique<ExtractiveSummarizer>(); }

}  // namespace compactor
