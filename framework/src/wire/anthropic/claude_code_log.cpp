#include "wire/anthropic/claude_code_log.hpp"

#include "wire/anthropic/anthropic_messages.hpp"

#include "import/import_drafts.hpp"
#include "import/json_lines.hpp"
#include "import/log_json.hpp"
#include "import/log_time.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace compactor {

namespace json = boost::json;
using logs::is_type;
using logs::string_field;

namespace {

// The facts of a log line `calibrate` needs, whatever the line is: session id, compaction, and
// the usage of a call (once per message.id).
class CallRecorder {
 public:
  void read(const json::object& o, std::size_t line_no) {
    if (session_id.empty()) session_id = string_field(o, "sessionId");
    bool compact = (o.contains("isCompactSummary") && o.at("isCompactSummary").is_bool() && o.at("isCompactSummary").get_bool()) ||
                   string_field(o, "subtype") == "compact_boundary";
    if (compact && compaction_line == 0) compaction_line = line_no;
    if (string_field(o, "type") != "assistant") return;
    auto message = o.find("message");
    if (message == o.end() || !message->value().is_object()) return;
    const json::object& m = message->value().get_object();
    auto usage = m.find("usage");
    std::string id = string_field(m, "id");
    if (id.empty() || usage == m.end() || !usage->value().is_object()) return;
    const json::object& u = usage->value().get_object();
    auto [at, first] = seen_.emplace(id, calls.size());
    if (!first) {
      calls[at->second].output_tokens = std::max(calls[at->second].output_tokens, count(u, "output_tokens"));
      return;
    }
    calls.push_back({line_no, string_field(m, "model"),
                     count(u, "input_tokens") + count(u, "cache_read_input_tokens") + count(u, "cache_creation_input_tokens"),
                     count(u, "output_tokens"), parse_log_time(string_field(o, "timestamp")).value_or(0)});
  }

  std::vector<RecordedCall> calls;
  std::string session_id;
  std::size_t compaction_line = 0;

 private:
  static std::uint64_t count(const json::object& o, std::string_view key) {
    auto it = o.find(key);
    if (it == o.end()) return 0;
    if (it->value().is_int64()) return static_cast<std::uint64_t>(std::max<std::int64_t>(0, it->value().get_int64()));
    if (it->value().is_uint64()) return it->value().get_uint64();
    return 0;
  }
  std::map<std::string, std::size_t> seen_;  // message.id → its call
};

}  // namespace

ImportResult import_claude_code(std::string_view bytes, const std::string& source, bool sidechain) {
  ImportReport report;
  report.source = source;
  report.format = "claude-code";
  std::vector<ImportDraft> chain;
  std::unordered_map<std::string, std::size_t> position;  // uuid → chain length right after it
  std::set<std::string> log_tool_uses;
  CallRecorder recorder;
  JsonLines lines(bytes);
  while (std::optional<json::value> read = lines.next(report)) {
    const std::size_t line_no = lines.line_no();
    json::value& v = *read;
    json::object& o = v.get_object();
    recorder.read(o, line_no);
    std::string type = string_field(v, "type"), uuid = string_field(v, "uuid"), parent = string_field(v, "parentUuid");
    auto known_parent = parent.empty() ? position.end() : position.find(parent);
    // Where the chain stands after this line: a line whose parent is known continues from it.
    auto register_position = [&](std::size_t at) {
      if (!uuid.empty()) position[uuid] = at;
    };
    bool is_side = o.contains("isSidechain") && o.at("isSidechain").is_bool() && o.at("isSidechain").get_bool();
    if (type != "user" && type != "assistant") {
      ++report.other_skipped;
      register_position(known_parent != position.end() ? known_parent->second : chain.size());
      continue;
    }
    if (is_side != sidechain) {
      ++report.sidechain_skipped;
      continue;
    }
    if (o.contains("isMeta") && o.at("isMeta").is_bool() && o.at("isMeta").get_bool()) {
      ++report.meta_skipped;
      register_position(known_parent != position.end() ? known_parent->second : chain.size());
      continue;
    }
    auto message = o.find("message");
    if (message == o.end() || !message->value().is_object()) {
      ++report.other_skipped;
      continue;
    }
    json::value none;
    json::value* found = message->value().get_object().if_contains("content");
    json::value& content = found != nullptr ? *found : none;  // its blocks are moved into the draft
    // A typed prompt whose parent is earlier in the chain: the user rewound the session there, and
    // the branch after that point is abandoned. (Tool results are not rewinds: Claude Code
    // parents each result to the line holding its own tool_use, so parallel calls branch.)
    bool prompt = type == "user" && (content.is_string() || (content.is_array() && std::none_of(content.get_array().begin(), content.get_array().end(),
                                                                                                  [](const json::value& b) { return is_type(b, "tool_result"); })));
    if (prompt && known_parent != position.end() && known_parent->second < chain.size()) {
      report.rewound_skipped += chain.size() - known_parent->second;
      chain.resize(known_parent->second);
    }
    ImportDraft d{type == "user" ? Role::user : Role::assistant, {}, line_no};
    if (content.is_string()) {
      d.content.push_back(json::object{{"type", "text"}, {"text", std::move(content.get_string())}});
    } else if (content.is_array()) {
      for (auto& b : content.get_array())
        if (b.is_object()) d.content.push_back(std::move(b));
    }
    for (const auto& b : d.content)
      if (is_type(b, "tool_use")) log_tool_uses.insert(string_field(b, "id"));
    chain.push_back(std::move(d));
    register_position(chain.size());
  }
  report.tool_uses_in_log = log_tool_uses.size();
  // Assistant lines sharing a message.id are one message (the repairs join them, and the rest).
  ImportResult result = finish_import(std::move(chain), std::move(report), "line");
  result.recorded_calls = std::move(recorder.calls);
  result.session_id = std::move(recorder.session_id);
  result.compaction_line = recorder.compaction_line;
  return result;
}

namespace wire {
namespace {

bool shows_claude_code_lines(std::string_view bytes, std::string_view) {
  const std::string_view head = bytes.substr(0, 1 << 16);
  for (std::string_view marker : {"\"parentUuid\"", "\"sessionId\"", "\"leafUuid\"", "\"file-history-snapshot\""})
    if (head.find(marker) != std::string_view::npos) return true;
  return false;
}

class ClaudeCodeForm final : public InputForm {
 public:
  std::string_view name() const override { return "claude-code"; }
  std::string_view description() const override { return "a Claude Code session log (agent-*.jsonl: its sub-agent chain), imported"; }
  std::vector<Detection> detections() const override { return {{230, true, &shows_claude_code_lines}}; }

  Expected<InputDocument> read(std::string bytes, const InputSource& source) const override {
    return imported_document(import_claude_code(bytes, source.shown, sidechain(source)), anthropic_messages());
  }

  bool imports_sessions() const override { return true; }
  Expected<ImportedSession> import_session(std::string bytes, const InputSource& source) const override {
    return ImportedSession{import_claude_code(bytes, source.shown, sidechain(source)), &anthropic_messages(), &anthropic_messages()};
  }

 private:
  static bool sidechain(const InputSource& source) { return source.sidechain || source.file_name.rfind("agent-", 0) == 0; }
};

}  // namespace

const InputForm& claude_code_form() {
  static const ClaudeCodeForm form;
  return form;
}

}  // namespace wire

}  // namespace compactor
