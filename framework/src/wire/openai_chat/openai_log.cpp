#include "wire/openai_chat/openai_log.hpp"

#include "wire/anthropic/anthropic_messages.hpp"
#include "wire/openai_chat/openai_chat.hpp"

#include "import/import_drafts.hpp"
#include "import/log_json.hpp"

#include "model/conversation_host.hpp"
#include "model/conversation_reader.hpp"
#include "model/field_types.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <functional>
#include <set>
#include <unordered_map>

namespace compactor {

namespace json = boost::json;
using logs::is_type;
using logs::one_line_excerpt;
using logs::string_field;

namespace {

// The text of a message's content: a string, or the text of its text parts. A part of another
// kind (an image, audio, a file) has no place in the imported text: it is a repair, never
// dropped unsaid. Content of another type is refused.
Expected<std::string> openai_text_of(const json::value& content, const std::string& where, std::size_t index, ImportReport& report) {
  if (content.is_string()) return std::string(content.get_string());
  if (!content.is_array())
    return Error{where + ".content must be a string or an array of parts, got " + std::string(detail::json_kind(content))};
  std::string out;
  const json::array& parts = content.get_array();
  for (std::size_t j = 0; j < parts.size(); ++j) {
    const json::value& part = parts[j];
    if (!is_type(part, "text")) {
      std::string type = string_field(part, "type");
      report.repairs.push_back({"part_dropped", index, where + ".content." + std::to_string(j) + " (" +
                                                            (type.empty() ? std::string(detail::json_kind(part)) : type) +
                                                            ") is not carried"});
      continue;
    }
    const json::value* text = part.get_object().if_contains("text");
    if (text == nullptr || !text->is_string())
      return Error{where + ".content." + std::to_string(j) + ".text must be a string, got " +
                   (text == nullptr ? std::string("nothing") : std::string(detail::json_kind(*text)))};
    out += (out.empty() ? "" : "\n") + std::string(text->get_string());
  }
  return out;
}

// A tool call's input from its function.arguments: a JSON string by the spec; some histories
// hold the object itself (kept as is) or null / nothing / "" (an empty input, counted as a
// repair); anything else is refused, never silently emptied. `not_json` makes the error for
// arguments that are not JSON.
Expected<json::value> openai_tool_input(const json::value& call, const json::object& function, const std::string& at, std::size_t i,
                                        ImportReport& report,
                                        const std::function<Error(const detail::JsonErrorAt&, std::string_view)>& not_json) {
  const json::value* given = function.if_contains("arguments");
  if (given != nullptr && given->is_object()) return *given;
  if (given == nullptr || given->is_null() || (given->is_string() && given->get_string().empty())) {
    report.repairs.push_back({"missing_arguments_emptied", i,
                              "tool call " + string_field(call, "id") + " has " +
                                  (given == nullptr ? "no" : given->is_null() ? "null" : "empty") + " function.arguments; its input is {}"});
    return json::value(json::object{});
  }
  if (!given->is_string())
    return Error{at + ".function.arguments must be a JSON string or object, got " + std::string(detail::json_kind(*given))};
  const std::string_view arguments = given->get_string();
  detail::ValueParser arguments_parser(arguments);
  detail::JsonErrorAt refusal;
  auto read = detail::read_json(arguments_parser, arguments, {0, arguments.size()}, refusal);
  if (!read) return not_json(refusal, arguments);
  return std::move(*read);
}

// The ids of an OpenAI history as the Anthropic form takes them: one the API refuses
// (^[a-zA-Z0-9_-]+$) rewritten the same way in calls and results; a call id used twice (SWE-agent
// replays do this) given a fresh one, and so is the next result that names it. Each a repair.
struct OpenAiIds {
  explicit OpenAiIds(ImportReport& r) : report(r) {}
  ImportReport& report;
  std::unordered_map<std::string, std::string> renamed;
  std::set<std::string> used;
  std::unordered_map<std::string, std::string> pending;

  std::string api_id(const std::string& id, std::size_t index) {
    std::string clean = id;
    for (char& c : clean)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) c = '_';
    if (clean.empty()) clean = "call_" + std::to_string(index);
    if (clean != id && renamed.emplace(id, clean).second)
      report.repairs.push_back({"id_rewritten", index, "\"" + id + "\" → \"" + clean + "\""});
    return clean;
  }
  std::string call(const std::string& original, std::size_t index) {
    std::string id = api_id(original, index);
    if (used.insert(id).second) return id;
    std::string fresh;
    for (int n = 2; !used.insert(fresh = id + "_" + std::to_string(n)).second; ++n) {}
    report.repairs.push_back({"duplicate_id_rewritten", index, "tool call id " + id + " used again; now " + fresh});
    pending[original] = fresh;
    return fresh;
  }
  std::string result(const std::string& id, std::size_t index) {
    auto r = pending.find(id);
    if (r == pending.end()) return api_id(id, index);
    std::string fresh = r->second;
    pending.erase(r);
    return fresh;
  }
};

// The messages of an OpenAI history: a messages array, {"messages": […]}, or a trajectory's
// {"history": […]}; `key` and `steps` say how errors name them and where they are.
const json::array* openai_history_list(const json::value& root, std::string& key, std::vector<detail::PathStep>& steps) {
  key = "messages";
  const json::array* list = nullptr;
  if (root.is_array()) list = &root.get_array();
  else if (root.is_object() && root.get_object().contains("messages") && root.at("messages").is_array()) list = &root.at("messages").get_array();
  else if (root.is_object() && root.get_object().contains("history") && root.at("history").is_array()) {
    list = &root.at("history").get_array();
    key = "history";
  }
  if (root.is_object()) steps.push_back({key});
  return list;
}

}  // namespace

Expected<ImportResult> import_openai(std::string_view bytes, const std::string& source) {
  ImportReport report;
  report.source = source;
  report.format = "openai";
  boost::system::error_code ec;
  json::value root = detail::parse_json(bytes, ec);
  if (ec) {
    if (auto at = detail::find_json_error(bytes)) return Error{at->to_string(source)};
    return Error{source + ": not valid JSON: " + ec.message()};
  }
  std::string list_key;  // how error paths name the list: messages.N, or history.N in a trajectory
  std::vector<detail::PathStep> list_steps;  // where the list is in the file: nothing for a top-level array
  const json::array* list = openai_history_list(root, list_key, list_steps);
  if (list == nullptr) return Error{source + ": expected an OpenAI messages array, {\"messages\": […]} or a trajectory {\"history\": […]}"};

  // Where a value of the file is, for an error about it: `source:line:col (byte N)`.
  auto place_of = [&](const std::vector<detail::PathStep>& path) {
    auto span = detail::find_value_span(bytes, path);
    if (!span) return source;
    detail::LineColumn lc = detail::line_column(bytes, span->begin);
    return fmt::format("{}:{}:{} (byte {})", source, lc.line, lc.column, span->begin);
  };
  static const std::set<std::string> kKnown = {"role", "content", "tool_calls", "tool_call_id", "tool_call_ids", "name"};

  OpenAiIds ids(report);
  std::string system;
  std::vector<ImportDraft> drafts;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json::value& m = (*list)[i];
    ++report.lines;
    const std::string path = list_key + "." + std::to_string(i);
    std::string where = source + ": " + path;
    if (!m.is_object()) return Error{where + ": a message must be an object"};
    for (const auto& kv : m.get_object())
      if (!kKnown.count(kv.key())) ++report.fields_dropped;
    // A field the history gives with the wrong type is refused, never read as empty.
    for (std::string_view key : {"role", "tool_call_id", "name"})
      if (const json::value* f = m.get_object().if_contains(key); f != nullptr && !f->is_string() && !(key != "role" && f->is_null()))
        return Error{where + "." + std::string(key) + " must be a string, got " + std::string(detail::json_kind(*f))};
    std::string role = string_field(m, "role");
    const json::value* content = m.get_object().if_contains("content");
    // Only an assistant's content may be null or absent (its tool calls say what it did).
    const json::value no_content;
    if (content == nullptr || content->is_null()) {
      if (role == "system" || role == "developer" || role == "user" || role == "tool")
        return Error{where + ".content: a " + role + " message needs content, got " + (content == nullptr ? "nothing" : "null")};
      content = &no_content;
    }
    auto text = content->is_null() ? Expected<std::string>(std::string()) : openai_text_of(*content, where, i, report);
    if (!text) return text.error();
    if (role == "system" || role == "developer") {
      system += (system.empty() ? "" : "\n\n") + *text;
      continue;
    }
    if (role == "user") {
      drafts.push_back({Role::user, json::array{json::object{{"type", "text"}, {"text", *text}}}, i});
      continue;
    }
    if (role == "assistant") {
      ImportDraft d{Role::assistant, {}, i};
      if (!text->empty()) d.content.push_back(json::object{{"type", "text"}, {"text", *text}});
      if (const json::value* tool_calls = m.get_object().if_contains("tool_calls"); tool_calls != nullptr && !tool_calls->is_null()) {
        if (!tool_calls->is_array())
          return Error{where + ".tool_calls must be an array, got " + std::string(detail::json_kind(*tool_calls))};
        const auto& calls = tool_calls->get_array();
        for (std::size_t k = 0; k < calls.size(); ++k) {
          const json::value& call = calls[k];
          std::string at = where + ".tool_calls." + std::to_string(k);
          const json::value* function = call.is_object() && call.get_object().contains("function") ? &call.at("function") : nullptr;
          if (function == nullptr || !function->is_object()) return Error{at + ": has no function"};
          auto read = openai_tool_input(call, function->get_object(), at, i, report, [&](const detail::JsonErrorAt& refusal, std::string_view arguments) {
            std::vector<detail::PathStep> steps = list_steps;
            steps.insert(steps.end(), {{{}, i}, {"tool_calls"}, {{}, k}, {"function"}, {"arguments"}});
            return Error{fmt::format("{}: {}.tool_calls.{}.function.arguments is not JSON: {} at byte {} of the string {}",
                                     place_of(steps), path, k, refusal.what, refusal.offset, one_line_excerpt(arguments, 60))};
          });
          if (!read) return read.error();
          json::value input = std::move(*read);
          if (!input.is_object()) return Error{at + ".function.arguments is not a JSON object"};
          d.content.push_back(json::object{{"type", "tool_use"}, {"id", ids.call(string_field(call, "id"), i)},
                                           {"name", string_field(*function, "name")}, {"input", std::move(input)}});
        }
      }
      drafts.push_back(std::move(d));
      continue;
    }
    if (role == "tool") {
      std::string id = string_field(m, "tool_call_id");
      if (id.empty() && m.get_object().contains("tool_call_ids") && m.at("tool_call_ids").is_array() &&
          !m.at("tool_call_ids").get_array().empty() && m.at("tool_call_ids").get_array()[0].is_string())
        id = std::string(m.at("tool_call_ids").get_array()[0].get_string());
      drafts.push_back({Role::user, json::array{json::object{{"type", "tool_result"}, {"tool_use_id", ids.result(id, i)},
                                                             {"content", *text}}}, i});
      continue;
    }
    return Error{where + ": unknown role \"" + role + "\""};
  }
  return finish_import(std::move(drafts), std::move(report), "message", system);
}

std::string export_openai(const Conversation& c, std::map<std::string, std::size_t>* left_out) {
  auto leave_out = [&](std::string_view type) {
    if (left_out != nullptr) ++(*left_out)[std::string(type)];
  };
  json::array out;
  // A request body's system prompt comes back as the system message.
  if (const auto& buffer = ConversationHost::layout(c.frame()).buffer; c.format() == InputFormat::request_body && buffer) {
    boost::system::error_code ec;
    json::value body = detail::parse_json(*buffer, ec);
    if (!ec && body.is_object() && body.get_object().contains("system")) {
      const json::value& s = body.at("system");
      std::string text;
      if (s.is_string()) text = std::string(s.get_string());
      else if (s.is_array())
        for (const auto& part : s.get_array()) text += (text.empty() ? "" : "\n") + string_field(part, "text");
      out.push_back(json::object{{"role", "system"}, {"content", text}});
    }
  }
  // System entries inside `messages` go out as system messages at their places.
  const auto& entries = c.frame().system_entries;
  const auto& slots = c.system_slots();
  std::size_t next_entry = 0;
  auto entries_up_to = [&](std::size_t slot) {
    for (; next_entry < entries.size() && next_entry < slots.size() && slots[next_entry] <= slot; ++next_entry) {
      boost::system::error_code ec;
      json::value e = detail::parse_json(entries[next_entry].raw, ec);
      const json::value* content = !ec && e.is_object() ? e.get_object().if_contains("content") : nullptr;
      std::string text;
      if (content != nullptr && content->is_string()) text = std::string(content->get_string());
      else if (content != nullptr && content->is_array())
        for (const auto& part : content->get_array()) text += (text.empty() ? "" : "\n") + string_field(part, "text");
      out.push_back(json::object{{"role", "system"}, {"content", text}});
    }
  };
  for (std::size_t index = 0; index < c.size(); ++index) {
    entries_up_to(index);
    const MessagePtr& m = c.messages()[index];
    if (m->role() == Role::user) {
      std::string text;
      for (const Block& b : m->blocks()) {
        if (b.kind() == BlockKind::tool_result) {
          std::string content;
          if (const json::value* v = b.content(); v != nullptr && v->is_string()) content = std::string(v->get_string());
          else if (v != nullptr && v->is_array())
            for (const auto& part : v->get_array()) {
              if (is_type(part, "text")) content += (content.empty() ? "" : "\n") + string_field(part, "text");
              else leave_out((part.is_object() ? string_field(part, "type") : std::string("other")) + " parts of tool results");
            }
          out.push_back(json::object{{"role", "tool"}, {"tool_call_id", b.tool_use_id()}, {"content", content}});
          if (b.is_error()) leave_out("is_error flags of tool results");
        } else if (b.kind() == BlockKind::text) {
          text += (text.empty() ? "" : "\n") + std::string(b.text());
        } else {
          leave_out(std::string(b.type()) + " blocks");
        }
      }
      if (!text.empty()) out.push_back(json::object{{"role", "user"}, {"content", text}});
      continue;
    }
    std::string text;
    json::array calls;
    for (const Block& b : m->blocks()) {
      if (b.kind() == BlockKind::text) text += (text.empty() ? "" : "\n") + std::string(b.text());
      else if (b.kind() != BlockKind::tool_use) leave_out(std::string(b.type()) + " blocks");
      if (b.kind() == BlockKind::tool_use)
        calls.push_back(json::object{{"id", b.id()}, {"type", "function"},
                                     {"function", json::object{{"name", b.name()},
                                                               {"arguments", json::serialize(b.input() ? *b.input() : json::value(json::object{}))}}}});
    }
    json::object msg{{"role", "assistant"}, {"content", text.empty() ? json::value(nullptr) : json::value(text)}};
    if (!calls.empty()) msg["tool_calls"] = std::move(calls);
    out.push_back(std::move(msg));
  }
  entries_up_to(c.size());
  std::string text = "[\n";
  for (std::size_t i = 0; i < out.size(); ++i) text += (i ? ",\n" : "") + json::serialize(out[i]);
  return text + "\n]\n";
}


namespace wire {
namespace {

// A SWE-agent trajectory or another OpenAI history log: a file named .traj, or an object whose
// turns are under "history" (what it sent is rebuilt by the importer, its bookkeeping left out).
bool is_openai_log(std::string_view bytes, std::string_view name) {
  if (name.size() > 5 && name.ends_with(".traj")) return true;
  return bytes.substr(0, 1 << 16).find("\"history\"") != std::string_view::npos;
}

bool named_trajectory(std::string_view, std::string_view name) { return name.size() > 5 && name.ends_with(".traj"); }

// A system message alone is not enough: in an Anthropic history it is a mistake to report.
bool shows_openai_turns(std::string_view bytes, std::string_view) {
  const std::string_view head = bytes.substr(0, 1 << 16);
  for (std::string_view marker : {"\"tool_calls\"", "\"role\":\"tool\"", "\"role\": \"tool\"", "\"history\""})
    if (head.find(marker) != std::string_view::npos) return true;
  return false;
}

// A Chat Completions request whose system prompt and tools fill the first 64 KiB the log
// detection reads: its tools are functions, its calls tool_calls.
bool holds_chat_calls(std::string_view bytes, std::string_view) {
  for (std::string_view marker : {"\"tool_calls\"", "\"role\":\"tool\"", "\"type\":\"function\",\"function\""})
    if (bytes.find(marker) != std::string_view::npos) return true;
  return false;
}

// The model form of a Chat history the adapter read, as an Anthropic request: the head's system
// texts as `system`, the later ones as system entries at their places, the messages with
// everything they carry. Nothing when that request cannot be read.
std::optional<ImportedSession> as_anthropic_request(const WireRequest& request, std::string_view bytes, const std::string& source) {
  const Conversation& c = request.conversation();
  boost::system::error_code ec;
  const json::value doc = detail::parse_json(bytes, ec);
  const json::array* list = ec ? nullptr : doc.is_array() ? &doc.get_array() : doc.get_object().at("messages").if_array();
  json::array system;
  for (std::size_t i = 0; list != nullptr && i < list->size(); ++i) {
    const json::object& m = (*list)[i].get_object();
    const std::string_view role = m.at("role").get_string();
    if (role != "system" && role != "developer") {
      if (!system.empty()) break;
      continue;
    }
    const json::value& content = m.at("content");
    if (content.is_string()) system.push_back(json::object{{"type", "text"}, {"text", content}});
    else if (content.is_array())
      for (const auto& part : content.get_array()) system.push_back(part);
  }
  std::string body = "{";
  if (!system.empty()) body += "\"system\":" + json::serialize(system) + ",";
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
      json::value entry = detail::parse_json(c.frame().system_entries[k].raw, e);
      if (!e) entry.as_object()["role"] = "system";
      add(json::serialize(entry));
    }
    if (i < c.size()) add(c[i].raw());
  }
  body += "]}";
  ReadOptions options;
  options.source = source;
  auto conversation = read_conversation(std::move(body), options);
  if (!conversation) return std::nullopt;
  ImportedSession s;
  s.format = s.api = &openai_chat();
  s.result.report.source = source;
  s.result.report.format = "openai";
  s.result.report.messages = conversation->size();
  s.result.report.lines = list != nullptr ? list->size() : 0;
  for (const MessagePtr& m : conversation->messages())
    for (const Block& b : m->blocks()) s.result.report.tool_uses += b.kind() == BlockKind::tool_use;
  s.result.conversation = std::move(*conversation);
  return s;
}

class OpenAiForm final : public InputForm {
 public:
  std::string_view name() const override { return "openai"; }
  std::string_view description() const override {
    return "an OpenAI Chat Completions request body or messages array, or a history log (SWE-agent .traj), imported";
  }
  std::vector<Detection> detections() const override {
    return {{200, true, &named_trajectory}, {240, true, &shows_openai_turns}, {320, false, &holds_chat_calls}};
  }

  Expected<InputDocument> read(std::string bytes, const InputSource& source) const override {
    if (is_openai_log(bytes, source.file_name)) return imported_document(import_openai(bytes, source.shown), anthropic_messages());
    return request_document(openai_chat(), std::move(bytes), source.shown);
  }

  // Read by the adapter (every field it carries kept, in the model form) when it can, else as the
  // importer reads it (a Chat history the API would refuse is repaired there, every repair listed).
  bool imports_sessions() const override { return true; }
  Expected<ImportedSession> import_session(std::string bytes, const InputSource& source) const override {
    std::optional<Error> faithful;  // why the Chat adapter could not read it, if it could not
    if (!is_openai_log(bytes, source.file_name)) {
      auto request = openai_chat().read(bytes, source.shown);
      if (!request) faithful = request.error();
      else if (auto s = as_anthropic_request(**request, bytes, source.shown)) return std::move(*s);
    }
    auto imported = import_openai(bytes, source.shown);
    // A Chat history neither read faithfully nor repaired: the faithful reading's reason.
    if (!imported) return faithful ? *faithful : imported.error();
    return ImportedSession{std::move(*imported), &anthropic_messages(), &openai_chat()};
  }
};

}  // namespace

const InputForm& openai_form() {
  static const OpenAiForm form;
  return form;
}

}  // namespace wire

}  // namespace compactor
