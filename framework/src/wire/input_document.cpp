#include "wire/input_document.hpp"

#include "wire/anthropic/anthropic_messages.hpp"
#include "wire/gemini/gemini.hpp"
#include "wire/openai_chat/openai_chat.hpp"
#include "wire/openai_responses/openai_responses.hpp"

#include "wire/openai_responses/codex_session.hpp"
#include "wire/gemini/gemini_chat.hpp"
#include "wire/anthropic/claude_code_log.hpp"
#include "wire/openai_chat/openai_log.hpp"

#include "import/importers.hpp"
#include "model/conversation_reader.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace compactor::wire {
namespace {

// A log turned into Anthropic messages: written back as the model writes it.
class ImportedRequest final : public WireRequest {
 public:
  explicit ImportedRequest(Conversation c) : conversation_(std::move(c)) {}
  const Conversation& conversation() const override { return conversation_; }
  Expected<std::string> write(const Conversation& compacted) const override { return compacted.serialize(); }

 private:
  Conversation conversation_;
};

std::string name_of(const std::string& path) {
  const std::string source = path == "-" ? "<stdin>" : path;
  return source.substr(source.find_last_of('/') + 1);
}

Expected<InputDocument> import_log(std::string bytes, const std::string& source, ImportFormat format) {
  auto imported = format == ImportFormat::claude_code
                      ? Expected<ImportResult>(import_claude_code(bytes, source, name_of(source).rfind("agent-", 0) == 0))
                  : format == ImportFormat::codex      ? import_codex_session(bytes, source)
                  : format == ImportFormat::gemini_cli ? Expected<ImportResult>(import_gemini_chat(bytes, source))
                                                       : import_openai(bytes, source);
  if (!imported) return imported.error();
  const ImportReport& r = imported->report;
  if (!imported->conversation) return Error{r.source + ": no message to import"};
  InputDocument doc;
  doc.request = std::make_unique<ImportedRequest>(std::move(*imported->conversation));
  // A Codex session is a Responses history, with that API's rules.
  doc.format = format == ImportFormat::codex ? &openai_responses() : &anthropic_messages();
  doc.imported = "imported " + r.source + " (" + std::string(to_string(r.format)) + "): " + r.summary_line();
  return doc;
}

Expected<InputDocument> read_with(const WireFormat& format, std::string bytes, const std::string& source) {
  auto request = format.read(std::move(bytes), source);
  if (!request) return request.error();
  InputDocument doc;
  doc.request = std::move(*request);
  doc.format = &format;
  return doc;
}

// A SWE-agent trajectory or another OpenAI history log: a file named .traj, or an object whose
// turns are under "history" (what it sent is rebuilt by the importer, its bookkeeping left out).
bool is_openai_log(std::string_view bytes, const std::string& name) {
  if (name.size() > 5 && name.ends_with(".traj")) return true;
  return bytes.substr(0, 1 << 16).find("\"history\"") != std::string_view::npos;
}

// A Responses request: an object with an input array and no messages, or an items array typed as
// only the Responses API types them (input_text, output_text, function_call, reasoning…).
bool is_responses_request(std::string_view bytes) {
  const std::size_t start = bytes.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return false;
  if (bytes[start] == '{') {
    auto input = detail::find_value_span(bytes, {{"input"}});
    return input && bytes[input->begin] == '[' && !detail::find_value_span(bytes, {{"messages"}});
  }
  if (bytes[start] != '[') return false;
  std::string_view head = bytes.substr(0, 1 << 16);
  for (std::string_view marker : {"\"input_text\"", "\"output_text\"", "\"function_call\"", "\"function_call_output\"",
                                  "\"custom_tool_call\"", "\"reasoning\""})
    if (head.find(marker) != std::string_view::npos) return true;
  return false;
}

// Whether the first 64 KiB hold a Messages API tool block, which no other API's request has: the
// history is the Messages API's, and no other API's markers are searched for through the whole
// input (three scans of a 13 MB history were 4% of its run).
bool shows_messages_api_blocks(std::string_view bytes) {
  const std::string_view head = bytes.substr(0, 1 << 16);
  for (std::string_view marker : {"\"type\":\"tool_use\"", "\"type\": \"tool_use\"", "\"type\":\"tool_result\"", "\"type\": \"tool_result\""})
    if (head.find(marker) != std::string_view::npos) return true;
  return false;
}

// A Gemini API request body: an object whose `contents` hold `parts` (and no `messages`), told
// apart by its start, before any detection that looks for other APIs' words in its text.
bool is_gemini_body(std::string_view bytes) {
  const std::size_t start = bytes.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || bytes[start] != '{') return false;
  std::string_view head = bytes.substr(start, 1 << 16);
  const std::size_t contents = head.find("\"contents\"");
  return contents != std::string_view::npos && head.find("\"parts\"", contents) != std::string_view::npos &&
         head.find("\"messages\"") == std::string_view::npos && !is_gemini_chat(head);
}

}  // namespace

const std::vector<std::string>& input_format_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"auto", "anthropic", "claude-code", "codex", "openai", "responses", "gemini", "gemini-cli"};
    return n;
  }();
  return names;
}

std::optional<std::string> input_format_error(const std::optional<std::string>& format) {
  const auto& names = input_format_names();
  if (!format || std::find(names.begin(), names.end(), *format) != names.end()) return std::nullopt;
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i) list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return "--input-format takes " + list + ", got \"" + *format + "\"";
}

Expected<InputDocument> read_input_document(const std::string& path, const std::optional<std::string>& format) {
  if (auto bad = input_format_error(format)) return Error{*bad};
  auto read = read_input_bytes(path);
  if (!read) return read.error();
  std::string bytes = std::move(read).value();
  const std::string source = path == "-" ? "<stdin>" : path;
  const std::string name = name_of(path);
  const std::string f = format.value_or("auto");
  if (f == "claude-code") return import_log(std::move(bytes), source, ImportFormat::claude_code);
  if (f == "codex") return import_log(std::move(bytes), source, ImportFormat::codex);
  if (f == "responses") return read_with(openai_responses(), std::move(bytes), source);
  if (f == "openai") {
    if (is_openai_log(bytes, name)) return import_log(std::move(bytes), source, ImportFormat::openai);
    return read_with(openai_chat(), std::move(bytes), source);
  }
  if (f == "anthropic") return read_with(anthropic_messages(), std::move(bytes), source);
  if (f == "gemini") return read_with(gemini(), std::move(bytes), source);
  if (f == "gemini-cli") return import_log(std::move(bytes), source, ImportFormat::gemini_cli);
  if (is_gemini_body(bytes)) return read_with(gemini(), std::move(bytes), source);
  switch (detect_import_format(bytes, name)) {
    case ImportFormat::claude_code: return import_log(std::move(bytes), source, ImportFormat::claude_code);
    case ImportFormat::codex: return import_log(std::move(bytes), source, ImportFormat::codex);
    case ImportFormat::openai:
      if (is_openai_log(bytes, name)) return import_log(std::move(bytes), source, ImportFormat::openai);
      return read_with(openai_chat(), std::move(bytes), source);
    case ImportFormat::gemini_cli: return import_log(std::move(bytes), source, ImportFormat::gemini_cli);
    case ImportFormat::anthropic: break;
  }
  if (!shows_messages_api_blocks(bytes)) {
    if (is_responses_request(bytes)) return read_with(openai_responses(), std::move(bytes), source);
    // A Chat Completions request whose system prompt and tools fill the first 64 KiB the log
    // detection reads: its tools are functions, its calls tool_calls.
    for (std::string_view marker : {"\"tool_calls\"", "\"role\":\"tool\"", "\"type\":\"function\",\"function\""})
      if (bytes.find(marker) != std::string::npos) return read_with(openai_chat(), std::move(bytes), source);
  }
  auto doc = read_with(anthropic_messages(), std::move(bytes), source);
  // An OpenAI chat without tool calls looks like Anthropic messages but starts with its system
  // message: detection keeps the error (in Anthropic messages it is a mistake), and says what to
  // give if the file is such a chat.
  if (!doc && doc.error().message.find("(rule: never first)") != std::string::npos)
    return Error{doc.error().message + "\n" + source +
                 ": an OpenAI chat history starts with its system message; if this is one, give --input-format openai"};
  return doc;
}

Expected<ImportedSession> import_session(const std::string& path, std::optional<ImportFormat> format, bool sidechain) {
  auto read = read_input_bytes(path);
  if (!read) return read.error();
  std::string bytes = std::move(read).value();
  const std::string source = path == "-" ? "<stdin>" : path;
  const std::string name = name_of(path);
  const ImportFormat f = format.value_or(detect_import_format(bytes, name));
  std::optional<Error> faithful;  // why the Chat adapter could not read it, if it could not
  if (f == ImportFormat::openai && !is_openai_log(bytes, name)) {
    auto request = openai_chat().read(bytes, source);
    if (!request) faithful = request.error();
    if (request) {
      // The model form as an Anthropic request: the head's system texts as `system`, the later
      // ones as system entries at their places, the messages with everything they carry.
      const Conversation& c = (*request)->conversation();
      boost::system::error_code ec;
      const boost::json::value doc = detail::parse_json(bytes, ec);
      const boost::json::array* list = ec ? nullptr : doc.is_array() ? &doc.get_array() : doc.get_object().at("messages").if_array();
      boost::json::array system;
      std::vector<std::string> entries;
      for (std::size_t i = 0; list != nullptr && i < list->size(); ++i) {
        const boost::json::object& m = (*list)[i].get_object();
        const std::string_view role = m.at("role").get_string();
        if (role != "system" && role != "developer") {
          if (!entries.empty() || !system.empty()) break;
          continue;
        }
        const boost::json::value& content = m.at("content");
        if (content.is_string()) system.push_back(boost::json::object{{"type", "text"}, {"text", content}});
        else if (content.is_array())
          for (const auto& part : content.get_array()) system.push_back(part);
      }
      std::string body = "{";
      if (!system.empty()) body += "\"system\":" + boost::json::serialize(system) + ",";
      body += "\"messages\":[";
      const auto& slots = c.system_slots();
      std::size_t k = 0;
      bool first = true;
      auto add = [&](std::string_view raw) {
        body += (first ? "" : ",");
        body += raw;
        first = false;
      };
      for (std::size_t i = 0; i <= c.size(); ++i) {
        for (; k < slots.size() && slots[k] <= i; ++k) {
          boost::system::error_code e;
          boost::json::value entry = detail::parse_json(c.frame().system_entries[k].raw, e);
          if (!e) entry.as_object()["role"] = "system";
          add(boost::json::serialize(entry));
        }
        if (i < c.size()) add(c[i].raw());
      }
      body += "]}";
      ReadOptions options;
      options.source = source;
      auto conversation = read_conversation(std::move(body), options);
      if (conversation) {
        ImportedSession s;
        s.format = &openai_chat();
        s.result.report.source = source;
        s.result.report.format = ImportFormat::openai;
        s.result.report.messages = conversation->size();
        s.result.report.lines = list != nullptr ? list->size() : 0;
        for (const MessagePtr& m : conversation->messages())
          for (const Block& b : m->blocks()) s.result.report.tool_uses += b.kind() == BlockKind::tool_use;
        s.result.conversation = std::move(*conversation);
        return s;
      }
    }
  }
  // Everything else as the importers read it (the file again: what detection read is small
  // beside a replay).
  auto imported = import_file(path, f, sidechain);
  // A Chat history neither read faithfully nor repaired: the faithful reading's reason.
  if (!imported) return faithful ? *faithful : imported.error();
  ImportedSession s;
  // A Codex session is a Responses history, with that API's rules (its model form carries what
  // the Responses API has and the Messages API refuses).
  s.format = f == ImportFormat::codex ? &openai_responses() : &anthropic_messages();
  s.result = std::move(*imported);
  return s;
}

ImportFormat detect_import_format(std::string_view bytes, const std::string& name) {
  if (name.size() > 5 && name.substr(name.size() - 5) == ".traj") return ImportFormat::openai;
  if (is_codex_session(bytes)) return ImportFormat::codex;
  std::string_view head = bytes.substr(0, 1 << 16);
  if (is_gemini_chat(head)) return ImportFormat::gemini_cli;  // it has a sessionId too
  for (std::string_view marker : {"\"parentUuid\"", "\"sessionId\"", "\"leafUuid\"", "\"file-history-snapshot\""})
    if (head.find(marker) != std::string_view::npos) return ImportFormat::claude_code;
  // A system message alone is not enough: in an Anthropic history it is a mistake to report.
  for (std::string_view marker : {"\"tool_calls\"", "\"role\":\"tool\"", "\"role\": \"tool\"", "\"history\""})
    if (head.find(marker) != std::string_view::npos) return ImportFormat::openai;
  return ImportFormat::anthropic;
}

Expected<ImportResult> import_file(const std::string& path, std::optional<ImportFormat> format, bool sidechain) {
  auto read = read_input_bytes(path);
  if (!read) return read.error();
  std::string bytes = std::move(read).value();
  std::string source = path == "-" ? "<stdin>" : path;
  std::string name = source.substr(source.find_last_of('/') + 1);
  ImportFormat f = format.value_or(detect_import_format(bytes, name));
  switch (f) {
    case ImportFormat::claude_code:
      return import_claude_code(bytes, source, sidechain || name.rfind("agent-", 0) == 0);
    case ImportFormat::openai:
      return import_openai(bytes, source);
    case ImportFormat::codex:
      return import_codex_session(bytes, source);
    case ImportFormat::gemini_cli:
      return import_gemini_chat(bytes, source);
    case ImportFormat::anthropic: {
      ReadOptions options;
      options.source = source;
      auto c = read_conversation(std::move(bytes), options);
      // An OpenAI chat without tool calls looks like Anthropic messages but starts with its system
      // message: detection keeps the error (in Anthropic messages it is a mistake), and says what
      // to give if the file is such a chat.
      if (!c && !format && c.error().message.find("(rule: never first)") != std::string::npos)
        return Error{c.error().message + "\n" + source +
                     ": an OpenAI chat history starts with its system message; if this is one, give --input-format openai"};
      if (!c) return c.error();
      ImportResult r;
      r.report.source = source;
      r.report.messages = c->size();
      for (const MessagePtr& m : c->messages())
        for (const Block& b : m->blocks()) r.report.tool_uses += b.kind() == BlockKind::tool_use;
      r.conversation = std::move(c).value();
      return r;
    }
  }
  return Error{"unknown format"};
}

}  // namespace compactor::wire
