#include "wire/openai_responses/codex_session.hpp"

#include "wire/openai_responses/openai_responses.hpp"

#include "wire/openai_responses/responses_items.hpp"
#include "import/log_time.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <optional>

namespace compactor {
namespace {

namespace json = boost::json;

std::uint64_t uint_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64() && v->get_int64() > 0) return static_cast<std::uint64_t>(v->get_int64());
  return 0;
}

// Whether an item is the model's (what a call produced), as opposed to the client's.
bool produced(const json::object& item) {
  const json::value* type = item.if_contains("type");
  const json::value* role = item.if_contains("role");
  if (role != nullptr) return *role == "assistant";
  if (type == nullptr || !type->is_string()) return false;
  std::string_view t = type->get_string();
  return !t.ends_with("_output") && t != "compaction" && t != "compaction_summary";
}

}  // namespace

bool is_codex_session(std::string_view bytes) {
  std::string_view first = bytes.substr(0, bytes.find('\n'));
  return first.find("\"session_meta\"") != std::string_view::npos && first.find("\"cli_version\"") != std::string_view::npos;
}

namespace {

// What the log says the last call sent, read record by record.
struct CodexCalls {
  std::string base_instructions, model;
  std::vector<std::string> items;       // serialized, in order
  std::vector<std::size_t> item_lines;  // 1-based line of each
  std::size_t first_produced = 0;       // the line of the first item of the current call's answer
  std::int64_t first_produced_ms = 0;   // and its record's time

  void take(std::string_view kind, const json::object& body, std::size_t line, std::int64_t time_ms, ImportResult& result) {
    if (kind == "session_meta") {
      if (const json::value* id = body.if_contains("id"); id != nullptr && id->is_string()) result.session_id = std::string(id->get_string());
      if (const json::value* b = body.if_contains("base_instructions"); b != nullptr && b->is_object())
        if (const json::value* t = b->get_object().if_contains("text"); t != nullptr && t->is_string())
          base_instructions = std::string(t->get_string());
    } else if (kind == "turn_context") {
      if (const json::value* m = body.if_contains("model"); m != nullptr && m->is_string()) model = std::string(m->get_string());
    } else if (kind == "response_item") {
      json::object item = body;
      item.erase("internal_chat_message_metadata_passthrough");  // Codex's own bookkeeping, never sent
      if (produced(item) && first_produced == 0) {
        first_produced = line;
        first_produced_ms = time_ms;
      }
      items.push_back(json::serialize(item));
      item_lines.push_back(line);
    } else if (kind == "compacted") {
      // Codex compacted its history: what it sends from here on is the replacement.
      const json::value* replacement = body.if_contains("replacement_history");
      if (replacement == nullptr || !replacement->is_array()) {
        ++result.report.other_skipped;
        return;
      }
      items.clear();
      item_lines.clear();
      for (const auto& item : replacement->get_array()) {
        items.push_back(json::serialize(item));
        item_lines.push_back(line);
      }
      result.compaction_line = line;
    } else if (kind == "token_usage_record") {
      const json::value* usage = body.if_contains("usage");
      if (usage != nullptr && usage->is_object()) {
        RecordedCall call;
        call.line = first_produced != 0 ? first_produced : line;
        call.model = model;
        call.prompt_tokens = uint_of(usage->get_object(), "input_tokens");
        call.output_tokens = uint_of(usage->get_object(), "output_tokens");
        call.time_ms = first_produced != 0 ? first_produced_ms : time_ms;
        result.recorded_calls.push_back(std::move(call));
      }
      first_produced = 0;
    } else {
      ++result.report.other_skipped;  // events, world state: not what the model is sent
    }
  }
};

// The request Codex's last call sent: its model, the base instructions as the developer message
// it sends first, then the items; read back as a Responses request into `result`. An error if
// the items do not make one.
std::optional<Error> read_last_request(const CodexCalls& calls, const std::string& source, ImportResult& result) {
  std::string text = "{\"model\":" + json::serialize(json::value(calls.model)) + ",\"input\":[";
  std::vector<std::pair<std::size_t, std::size_t>> at;  // each item's offset and length in `text`
  std::vector<std::size_t> lines;
  auto add = [&](const std::string& item, std::size_t item_line) {
    if (!at.empty()) text += ',';
    at.emplace_back(text.size(), item.size());
    text += item;
    lines.push_back(item_line);
  };
  if (!calls.base_instructions.empty())
    add(json::serialize(json::object{{"type", "message"}, {"role", "developer"},
                                     {"content", json::array{json::object{{"type", "input_text"}, {"text", calls.base_instructions}}}}}),
        1);
  for (std::size_t k = 0; k < calls.items.size(); ++k) add(calls.items[k], calls.item_lines[k]);
  text += "]}";
  auto buffer = std::make_shared<const std::string>(std::move(text));
  std::vector<std::string_view> views;
  views.reserve(at.size());
  for (auto [offset, length] : at) views.push_back(std::string_view(*buffer).substr(offset, length));
  boost::system::error_code ec;
  json::value doc = detail::parse_json(*buffer, ec);
  if (ec) return Error{source + ": the items do not make a request: " + ec.message()};
  auto history = read_responses_items(buffer, views, doc.at("input").get_array(), {}, source + ": input");
  if (!history) return history.error();
  ImportReport& report = result.report;
  for (const ResponsesItemRange& origin : history->origins) result.message_lines.push_back(lines[origin.first]);
  report.messages = history->conversation->size();
  for (const MessagePtr& m : history->conversation->messages())
    for (const Block& b : m->blocks()) report.tool_uses += b.kind() == BlockKind::tool_use;
  report.tool_uses_in_log = report.tool_uses;
  result.conversation = std::move(history->conversation);
  return std::nullopt;
}

}  // namespace

Expected<ImportResult> import_codex_session(std::string_view bytes, const std::string& source) {
  ImportResult result;
  ImportReport& report = result.report;
  report.source = source;
  report.format = "codex";
  CodexCalls calls;
  std::size_t line = 0;
  for (std::size_t p = 0; p < bytes.size();) {
    std::size_t end = bytes.find('\n', p);
    if (end == std::string_view::npos) end = bytes.size();
    std::string_view text = bytes.substr(p, end - p);
    p = end + 1;
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    ++report.lines;
    boost::system::error_code ec;
    json::value v = detail::parse_json(text, ec);
    const json::object* record = !ec ? v.if_object() : nullptr;
    const json::value* type = record != nullptr ? record->if_contains("type") : nullptr;
    const json::value* payload = record != nullptr ? record->if_contains("payload") : nullptr;
    if (record == nullptr || type == nullptr || !type->is_string() || payload == nullptr || !payload->is_object()) {
      if (report.broken_lines.empty())
        report.first_broken_why = fmt::format("line {}: {}", line, ec ? ec.message() : "not a record with a type and a payload object");
      report.broken_lines.push_back(line);
      continue;
    }
    std::int64_t time_ms = 0;
    if (const json::value* t = record->if_contains("timestamp"); t != nullptr && t->is_string())
      time_ms = parse_log_time(t->get_string()).value_or(0);
    calls.take(type->get_string(), payload->get_object(), line, time_ms, result);
  }
  if (calls.items.empty()) {
    report.empty = true;
    return result;
  }
  if (std::optional<Error> error = read_last_request(calls, source, result)) return *std::move(error);
  return result;
}

namespace wire {
namespace {

bool opens_a_codex_session(std::string_view bytes, std::string_view) { return is_codex_session(bytes); }

class CodexForm final : public InputForm {
 public:
  std::string_view name() const override { return "codex"; }
  std::string_view description() const override { return "a Codex CLI session file, read as the Responses request its last call sent"; }
  std::vector<Detection> detections() const override { return {{210, true, &opens_a_codex_session}}; }

  Expected<InputDocument> read(std::string bytes, const InputSource& source) const override {
    return imported_document(import_codex_session(bytes, source.shown), openai_responses());
  }

  // A Responses history, with that API's rules (its model form carries what the Responses API
  // has and the Messages API refuses).
  bool imports_sessions() const override { return true; }
  Expected<ImportedSession> import_session(std::string bytes, const InputSource& source) const override {
    auto imported = import_codex_session(bytes, source.shown);
    if (!imported) return imported.error();
    return ImportedSession{std::move(*imported), &openai_responses(), &openai_responses(), true};
  }
};

}  // namespace

const InputForm& codex_form() {
  static const CodexForm form;
  return form;
}

}  // namespace wire

}  // namespace compactor
