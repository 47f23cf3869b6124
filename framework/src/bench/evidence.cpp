#include "bench/evidence.hpp"

#include "model/json_scanner.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <limits>
#include <set>

namespace compactor::bench {

namespace json = boost::json;

namespace {

bool is_output(const Block& b) { return b.kind() == BlockKind::tool_result || b.kind() == BlockKind::server_tool_result; }
bool is_tool_input(const Block& b) { return b.kind() == BlockKind::tool_use || b.kind() == BlockKind::server_tool_use; }

// Every string below `v`. A tool's input may be JSON text (an OpenAI call's `arguments` the
// importer could not read as an object): its decoded strings are visited instead, since the
// request holds strings escaped as JSON and what is compared is the decoded text.
template <typename Visit>
void visit_strings(const json::value& v, bool decode, const Visit& visit) {
  switch (v.kind()) {
    case json::kind::string: {
      std::string_view s = v.get_string();
      const std::size_t first = s.find_first_not_of(" \t\r\n");
      if (decode && first != std::string_view::npos && (s[first] == '{' || s[first] == '[')) {
        boost::system::error_code ec;
        json::value parsed = detail::parse_json(s, ec);
        if (!ec) return visit_strings(parsed, false, visit);
      }
      visit(s);
      break;
    }
    case json::kind::array:
      for (const auto& e : v.get_array()) visit_strings(e, decode, visit);
      break;
    case json::kind::object:
      for (const auto& kv : v.get_object()) visit_strings(kv.value(), decode, visit);
      break;
    default:
      break;
  }
}

// The strings of a block that can hold text a person or a tool wrote: not its type, ids,
// signature or cache marker.
template <typename Visit>
void visit_block(const Block& b, const Visit& visit) {
  if (b.json() == nullptr) return visit(b.text());
  for (const auto& kv : *b.json()) {
    const std::string_view key = kv.key();
    if (key == "type" || key == "id" || key == "tool_use_id" || key == "signature" || key == "cache_control") continue;
    visit_strings(kv.value(), is_tool_input(b), visit);
  }
}

// The text a line is compared by: blanks (CRLF's CR among them) cut at both ends.
std::string_view trimmed(std::string_view line) {
  const std::size_t start = line.find_first_not_of(" \t\r\f\v");
  if (start == std::string_view::npos) return {};
  return line.substr(start, line.find_last_not_of(" \t\r\f\v") - start + 1);
}

// At most `n` bytes of `s`, not cutting a UTF-8 sequence.
std::string utf8_prefix(std::string_view s, std::size_t n) {
  if (s.size() <= n) return std::string(s);
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n));
}

// "Read /src/app.py": a tool call as a miss names where its result came from.
std::string describe_call(const Block& use) {
  std::string out(use.name());
  const json::value* input = use.input();
  if (input == nullptr || !input->is_object()) return out;
  for (const char* key : {"file_path", "path", "notebook_path", "command", "cmd", "pattern", "url", "description"}) {
    const json::value* v = input->get_object().if_contains(key);
    std::string about;
    if (v != nullptr && v->is_string()) about = v->get_string();
    if (v != nullptr && v->is_array())
      for (const auto& e : v->get_array())
        if (e.is_string()) about += (about.empty() ? "" : " ") + std::string(e.get_string());
    if (about.empty()) continue;
    return out + " " + utf8_prefix(about.substr(0, about.find('\n')), 80);
  }
  return out;
}

}  // namespace

std::vector<std::string> action_lines(std::string_view text) {
  const bool patch = text.find("*** Begin Patch") != std::string_view::npos || text.starts_with("@@") ||
                     text.find("\n@@") != std::string_view::npos;
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (patch) {
      if (line.starts_with("***") || line.starts_with("@@") || line.starts_with("+++") || line.starts_with("---")) continue;
      if (!line.empty() && (line[0] == '+' || line[0] == '-' || line[0] == ' ')) line.remove_prefix(1);
    }
    line = trimmed(line);
    if (line.size() >= LineSearch::kWindow) out.emplace_back(line);
  }
  return out;
}

EvidenceIndex::EvidenceIndex(const Conversation& session, const std::vector<std::size_t>& answers, const Meter& meter)
    : lines_({}) {
  // The candidates: each line of an action, with the first answer whose action holds it.
  std::unordered_map<std::string, std::uint32_t> ids;
  std::vector<std::string> lines;
  std::vector<std::size_t> first_action;
  for (std::size_t a : answers)
    for (const Block& b : session[a].blocks()) {
      if (b.kind() != BlockKind::text && !is_tool_input(b)) continue;
      visit_block(b, [&](std::string_view s) {
        for (auto& line : action_lines(s))
          if (ids.emplace(line, static_cast<std::uint32_t>(lines.size())).second) {
            lines.push_back(std::move(line));
            first_action.push_back(a);
          }
      });
    }
  lines_ = LineSearch(std::move(lines));
  const Found found = scan(session);

  // A line is a probe at its first action when no earlier own words hold it and an earlier
  // result does; the smallest such result is the one an agent would fetch again.
  by_call_.resize(answers.size());
  std::unordered_map<std::size_t, std::size_t> call_of;
  for (std::size_t c = 0; c < answers.size(); ++c) call_of.emplace(answers[c], c);
  std::set<std::uint32_t> sized;
  for (std::uint32_t id = 0; id < lines_.size(); ++id) {
    const std::size_t a = first_action[id];
    if (found.own_first[id] < a) continue;
    std::uint32_t best = std::numeric_limits<std::uint32_t>::max();
    for (std::uint32_t r : found.in_results[id])
      if (results_[r].message < a && (best == std::numeric_limits<std::uint32_t>::max() || results_[r].bytes < results_[best].bytes)) best = r;
    if (best == std::numeric_limits<std::uint32_t>::max()) continue;
    by_call_[call_of.at(a)].push_back({id, best});
    sized.insert(best);
  }
  for (std::uint32_t r : sized) {
    std::string text;
    visit_block(session[results_[r].message].blocks()[results_[r].block], [&](std::string_view s) { text.append(s).append("\n"); });
    results_[r].tokens = meter.count_text(text);
  }
}

EvidenceIndex::Found EvidenceIndex::scan(const Conversation& session) {
  Found out{std::vector<std::size_t>(lines_.size(), std::numeric_limits<std::size_t>::max()),
            std::vector<std::vector<std::uint32_t>>(lines_.size())};
  holders_.assign(lines_.size(), {});
  std::unordered_map<std::string, std::string> calls;  // a tool call's id: what it was
  std::vector<std::uint32_t> found, in_message;
  for (std::size_t i = 0; i < session.size(); ++i) {
    const Message& m = session[i];
    message_index_.emplace(session.messages()[i].get(), static_cast<std::uint32_t>(i));
    in_message.clear();
    for (std::size_t k = 0; k < m.blocks().size(); ++k) {
      const Block& b = m.blocks()[k];
      if (is_tool_input(b)) calls.emplace(b.id(), describe_call(b));
      found.clear();
      std::uint64_t bytes = 0;
      visit_block(b, [&](std::string_view s) {
        lines_.find(s, found);
        bytes += s.size();
      });
      std::sort(found.begin(), found.end());
      found.erase(std::unique(found.begin(), found.end()), found.end());
      in_message.insert(in_message.end(), found.begin(), found.end());
      if (found.empty()) continue;
      if (is_output(b)) {
        auto call = calls.find(std::string(b.tool_use_id()));
        std::string from = (call != calls.end() ? call->second + " (" : "a result (") + std::string(b.tool_use_id()) + ", messages." +
                           std::to_string(i) + ")";
        for (std::uint32_t id : found) out.in_results[id].push_back(static_cast<std::uint32_t>(results_.size()));
        results_.push_back({i, k, bytes, 0, std::move(from)});
      } else if (m.role() == Role::assistant || b.kind() == BlockKind::text) {
        // The agent's own words (thinking among them) and the user's.
        for (std::uint32_t id : found) out.own_first[id] = std::min(out.own_first[id], i);
      }
    }
    std::sort(in_message.begin(), in_message.end());
    in_message.erase(std::unique(in_message.begin(), in_message.end()), in_message.end());
    for (std::uint32_t id : in_message) holders_[id].push_back(static_cast<std::uint32_t>(i));
  }
  return out;
}

const std::vector<std::uint32_t>& EvidenceMeter::lines_in(const MessagePtr& message) {
  auto it = written_.find(message.get());
  if (it != written_.end()) return it->second.second;
  std::vector<std::uint32_t> found;
  for (const Block& b : message->blocks()) visit_block(b, [&](std::string_view s) { index_.lines_.find(s, found); });
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return written_.emplace(message.get(), std::make_pair(message, std::move(found))).first->second.second;
}

void EvidenceMeter::measure(std::size_t call, const Conversation& sent, std::uint64_t sent_tokens, Evidence& out) {
  if (call >= index_.by_call_.size() || index_.by_call_[call].empty()) return;
  stamp_.resize(index_.message_index_.size());
  ++epoch_;
  std::vector<const std::vector<std::uint32_t>*> written;
  for (const MessagePtr& m : sent.messages()) {
    if (auto it = index_.message_index_.find(m.get()); it != index_.message_index_.end()) stamp_[it->second] = epoch_;
    else written.push_back(&lines_in(m));
  }
  std::set<std::uint32_t> charged;  // results charged at this call
  ++out.calls;
  for (const EvidenceIndex::Probe& p : index_.by_call_[call]) {
    ++out.probes;
    bool visible = false;
    for (std::uint32_t h : index_.holders_[p.line]) visible = visible || stamp_[h] == epoch_;
    for (const auto* lines : written) visible = visible || std::binary_search(lines->begin(), lines->end(), p.line);
    if (visible) {
      ++out.visible;
      continue;
    }
    const EvidenceIndex::Result& r = index_.results_[p.result];
    out.misses.push_back({call + 1, index_.lines_.line(p.line), r.from});
    if (!charged.insert(p.result).second) continue;
    ++out.refetches;
    out.refetch_read += sent_tokens;
    out.refetch_write += r.tokens;
    out.refetch_output += kRefetchOutputTokens;
  }
}

}  // namespace compactor::bench
