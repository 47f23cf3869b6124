#include "bench/retention.hpp"

#include "archive/archive_store.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <set>

namespace compactor::bench {

namespace json = boost::json;

namespace {

// Every string value below `v`, each followed by '\n' and a 0x01 byte so that a probe never
// matches across two strings (a probe is one line or one string; 0x01 occurs in neither).
void append_strings(const json::value& v, std::string& out);

void append_strings(const json::object& o, std::string& out) {
  for (const auto& kv : o) append_strings(kv.value(), out);
}

void append_strings(const json::value& v, std::string& out) {
  switch (v.kind()) {
    case json::kind::string:
      out.append(v.get_string().data(), v.get_string().size());
      out += "\n\x01";
      break;
    case json::kind::array:
      for (const auto& e : v.get_array()) append_strings(e, out);
      break;
    case json::kind::object:
      append_strings(v.get_object(), out);
      break;
    default:
      break;
  }
}

// A blob's strings: it holds one JSON value (a message, a block, a result's content) or JSONL
// (a summarized history, one message a line); anything else is searched as it is.
std::string blob_strings(const std::string& bytes) {
  std::string out;
  boost::system::error_code ec;
  json::value v = detail::parse_json(bytes, ec);
  if (!ec) {
    append_strings(v, out);
    return out;
  }
  std::string_view rest = bytes;
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    ec.clear();
    json::value l = detail::parse_json(line, ec);
    if (ec) out.append(line).append("\n\x01");
    else append_strings(l, out);
  }
  return out;
}

// The text of a tool_result's content: a string, or its text blocks joined.
std::string result_text(const Block& b) {
  const json::value* content = b.content();
  if (content == nullptr) return "";
  if (content->is_string()) return std::string(content->get_string());
  std::string out;
  if (content->is_array())
    for (const auto& e : content->get_array())
      if (e.is_object())
        if (const auto* t = e.get_object().if_contains("text"); t != nullptr && t->is_string()) {
          if (!out.empty()) out += "\n";
          out += t->get_string();
        }
  return out;
}

std::vector<std::string> probes_of(const Conversation& session, std::size_t end, bool facts_only) {
  std::set<std::string> probes;
  // "[compactor …" is Compactor's own text (an importer's placeholder for a result the log lacks),
  // not something of the session's to retain.
  auto add = [&](std::string text) {
    if (text.find_first_not_of(" \t\r\n") != std::string::npos && !text.starts_with("[compactor ")) probes.insert(std::move(text));
  };
  for (std::size_t i = 0; i < std::min(end, session.size()); ++i) {
    const Message& m = session[i];
    for (const Block& b : m.blocks()) {
      if (b.kind() == BlockKind::text && m.role() == Role::user && !facts_only) add(std::string(b.text()));
      if (b.kind() == BlockKind::tool_result && b.is_error()) add(first_line(result_text(b)));
      if (b.kind() == BlockKind::tool_use) {
        if (!facts_only) add(std::string(b.name()));
        if (const json::value* input = b.input(); input != nullptr && input->is_object())
          for (const char* key : {"file_path", "path", "notebook_path"})
            if (const auto* p = input->get_object().if_contains(key); p != nullptr && p->is_string())
              add(std::string(p->get_string()));
      }
    }
  }
  return {probes.begin(), probes.end()};
}

}  // namespace

std::string first_line(std::string_view text) {
  std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "";
  text.remove_prefix(start);
  std::string_view line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) line.remove_suffix(1);
  return std::string(line);
}

std::vector<std::string> retention_probes(const Conversation& session, std::size_t end) { return probes_of(session, end, false); }
std::vector<std::string> fact_probes(const Conversation& session, std::size_t end) { return probes_of(session, end, true); }

Retention measure_retention(const Conversation& request, const std::vector<std::string>& probes,
                            const std::vector<std::string>& facts, const std::string& archive_dir,
                            std::map<std::string, std::string>& blobs) {
  Retention r;
  std::string visible;
  for (const auto& m : request.messages()) append_strings(m->json(), visible);
  // Receipts named by the request, then by every blob restored (a summary's snapshot names the
  // receipts of the results micro had archived before it).
  std::string reachable;
  std::set<std::string> seen;
  std::vector<std::string> queue = find_receipts(visible);
  while (!queue.empty()) {
    std::string receipt = std::move(queue.back());
    queue.pop_back();
    if (!seen.insert(receipt).second) continue;
    auto cached = blobs.find(receipt);
    if (cached == blobs.end()) {
      auto bytes = restore_blob(archive_dir, receipt);
      cached = blobs.emplace(receipt, bytes ? blob_strings(*bytes) : std::string()).first;
    }
    reachable += cached->second;
    for (auto& next : find_receipts(cached->second)) queue.push_back(std::move(next));
  }
  r.facts = facts.size();
  for (const auto& f : facts) r.facts_visible += visible.find(f) != std::string::npos;
  r.probes = probes.size();
  for (const auto& p : probes) {
    if (visible.find(p) != std::string::npos) {
      ++r.visible;
      ++r.recoverable;
    } else if (reachable.find(p) != std::string::npos) {
      ++r.recoverable;
    } else {
      r.lost.push_back(p);
    }
  }
  return r;
}

}  // namespace compactor::bench
