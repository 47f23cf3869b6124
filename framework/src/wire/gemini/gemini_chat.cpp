#include "wire/gemini/gemini_chat.hpp"

#include "wire/anthropic/anthropic_messages.hpp"
#include "wire/gemini/gemini.hpp"

#include "import/json_lines.hpp"
#include "import/log_time.hpp"

#include "import/import_drafts.hpp"
#include "model/field_types.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>

#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

namespace compactor {
namespace {

namespace json = boost::json;

std::string string_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

const json::value* either(const json::object& o, std::string_view camel, std::string_view snake) {
  if (const json::value* v = o.if_contains(camel)) return v;
  return o.if_contains(snake);
}

// One message record, with the line it was (last) written on.
struct Record {
  json::object message;
  std::size_t line = 0;
};

// A functionResponse's `response` as the result's text: its "output" or "error" string when it
// has one ("Use "output" key to specify function output and "error" key to specify error
// details"), else the whole response as JSON.
json::object result_of(const json::object& response_part, const std::string& id) {
  const json::object& fr = either(response_part, "functionResponse", "function_response")->get_object();
  json::value content = "";
  bool error = false;
  if (const json::value* r = fr.if_contains("response")) {
    const json::object* o = r->if_object();
    const json::value* output = o != nullptr ? o->if_contains("output") : nullptr;
    const json::value* err = o != nullptr ? o->if_contains("error") : nullptr;
    if (o != nullptr && o->size() == 1 && output != nullptr && output->is_string()) {
      content = *output;
    } else if (o != nullptr && o->size() == 1 && err != nullptr && err->is_string()) {
      content = *err;
      error = true;
    } else {
      content = json::string(json::serialize(*r));
    }
  }
  json::object result{{"type", "tool_result"}, {"tool_use_id", id}, {"content", std::move(content)}};
  if (error) result.emplace("is_error", true);
  return result;
}

class ChatImporter {
 public:
  ChatImporter(ImportReport& report) : report_(report) {}

  // Records → drafts, in order.
  std::vector<ImportDraft> convert(const std::vector<Record>& records, std::vector<RecordedCall>& calls) {
    for (const Record& r : records) {
      const std::string type = string_of(r.message, "type");
      if (type == "user") user(r);
      else if (type == "gemini" || type == "model") model(r, calls);
      else ++report_.other_skipped;  // info, error, warning: shown to the person, never sent
    }
    return std::move(drafts_);
  }

 private:
  // A part of a user turn as blocks of the draft (a functionResponse already read from the
  // model turn's toolCalls is the same result written twice: read once).
  void user_part(const json::value& v, ImportDraft& d, std::size_t line) {
    const json::object* part = v.if_object();
    if (part == nullptr) return;
    if (const json::value* fr = either(*part, "functionResponse", "function_response"); fr != nullptr && fr->is_object()) {
      std::string id = string_of(fr->get_object(), "id");
      if (!id.empty() && answered_.count(id)) {
        ++duplicates_;
        return;
      }
      if (id.empty()) id = "gemini_result_" + std::to_string(line) + "_" + std::to_string(d.content.size());
      answered_.insert(id);
      d.content.push_back(result_of(*part, id));
      return;
    }
    if (const json::value* t = part->if_contains("text"); t != nullptr && t->is_string()) {
      if (part->contains("thought")) return;  // the model's thoughts: never sent back
      d.content.push_back(json::object{{"type", "text"}, {"text", *t}});
      return;
    }
    if (const json::value* inline_data = either(*part, "inlineData", "inline_data"); inline_data != nullptr && inline_data->is_object()) {
      const json::object& blob = inline_data->get_object();
      std::string mime = string_of(blob, "mimeType");
      if (mime.empty()) mime = string_of(blob, "mime_type");
      const std::string data = string_of(blob, "data");
      if (mime.rfind("image/", 0) == 0 && !data.empty()) {
        d.content.push_back(json::object{{"type", "image"}, {"source", json::object{{"type", "base64"}, {"media_type", mime}, {"data", data}}}});
        return;
      }
    }
    ++report_.fields_dropped;  // file data, code, a non-image blob: no Messages API form
  }

  void user(const Record& r) {
    ImportDraft d{Role::user, {}, r.line};
    const json::value* content = r.message.if_contains("content");
    if (content != nullptr && content->is_string()) {
      d.content.push_back(json::object{{"type", "text"}, {"text", *content}});
    } else if (content != nullptr && content->is_array()) {
      for (const auto& p : content->get_array()) user_part(p, d, r.line);
    }
    // 0.61 writes the results of a model turn's calls again as a user record: read once.
    const bool only_repeated = d.content.empty() && duplicates_ > 0 && content != nullptr && content->is_array() &&
                               duplicates_ == content->get_array().size();
    duplicates_ = 0;
    if (!only_repeated) drafts_.push_back(std::move(d));
  }

  void model(const Record& r, std::vector<RecordedCall>& calls) {
    ImportDraft d{Role::assistant, {}, r.line};
    const json::value* content = r.message.if_contains("content");
    if (content != nullptr && content->is_string()) {
      d.content.push_back(json::object{{"type", "text"}, {"text", *content}});
    } else if (content != nullptr && content->is_array()) {
      for (const auto& p : content->get_array()) {
        const json::object* part = p.if_object();
        const json::value* t = part != nullptr ? part->if_contains("text") : nullptr;
        if (t != nullptr && t->is_string() && !part->contains("thought")) d.content.push_back(json::object{{"type", "text"}, {"text", *t}});
      }
    }
    ImportDraft results{Role::user, {}, r.line};
    if (const json::value* tc = r.message.if_contains("toolCalls"); tc != nullptr && tc->is_array()) {
      std::size_t k = 0;
      for (const auto& c : tc->get_array()) {
        const json::object* call = c.if_object();
        if (call == nullptr) continue;
        std::string id = string_of(*call, "id");
        if (id.empty()) id = "gemini_call_" + std::to_string(r.line) + "_" + std::to_string(k);
        ++k;
        const json::value* args = call->if_contains("args");
        d.content.push_back(json::object{{"type", "tool_use"}, {"id", id}, {"name", string_of(*call, "name")},
                                         {"input", args != nullptr ? *args : json::value(json::object{})}});
        ++report_.tool_uses_in_log;
        // The recorded result: its functionResponse answers this call (whatever id it names),
        // the parts after it (an image the tool read) go with it.
        if (const json::value* result = call->if_contains("result"); result != nullptr && result->is_array()) {
          bool answered = false;
          for (const auto& p : result->get_array()) {
            const json::object* part = p.if_object();
            if (part == nullptr) continue;
            const json::value* fr = either(*part, "functionResponse", "function_response");
            if (fr != nullptr && fr->is_object() && !answered) {
              results.content.push_back(result_of(*part, id));
              if (std::string rid = string_of(fr->get_object(), "id"); !rid.empty()) answered_.insert(rid);
              answered_.insert(id);
              answered = true;
            } else {
              user_part(p, results, r.line);
            }
          }
        }
      }
    }
    drafts_.push_back(std::move(d));
    if (!results.content.empty()) drafts_.push_back(std::move(results));
    if (const json::value* tokens = r.message.if_contains("tokens"); tokens != nullptr && tokens->is_object()) {
      const json::object& t = tokens->get_object();
      RecordedCall call;
      call.line = r.line;
      call.model = string_of(r.message, "model");
      call.time_ms = parse_log_time(string_of(r.message, "timestamp")).value_or(0);
      if (const json::value* in = t.if_contains("input"); in != nullptr && in->is_number()) call.prompt_tokens = in->to_number<std::uint64_t>();
      if (const json::value* out = t.if_contains("output"); out != nullptr && out->is_number()) call.output_tokens = out->to_number<std::uint64_t>();
      calls.push_back(std::move(call));
    }
  }

  ImportReport& report_;
  std::vector<ImportDraft> drafts_;
  std::set<std::string> answered_;  // result ids read already
  std::size_t duplicates_ = 0;      // results of the record being read that were read already
};

// The layouts' records, in order: a message record replaces the one with its id.
class RecordList {
 public:
  void put(json::object message, std::size_t line) {
    std::string id = string_of(message, "id");
    if (!id.empty())
      if (auto it = where_.find(id); it != where_.end()) {
        records_[it->second] = Record{std::move(message), line};
        return;
      }
    if (!id.empty()) where_[id] = records_.size();
    records_.push_back(Record{std::move(message), line});
  }
  void reset() {
    records_.clear();
    where_.clear();
  }
  std::vector<Record>& records() { return records_; }

 private:
  std::vector<Record> records_;
  std::unordered_map<std::string, std::size_t> where_;
};

}  // namespace

bool is_gemini_chat(std::string_view head) { return head.find("\"projectHash\"") != std::string_view::npos; }

ImportResult import_gemini_chat(std::string_view bytes, const std::string& source) {
  ImportReport report;
  report.source = source;
  report.format = "gemini-cli";
  RecordList list;
  std::string session_id;
  std::string_view unit = "line";
  // The older layout: one JSON object holding the messages.
  boost::system::error_code ec;
  json::value whole = detail::parse_json(bytes, ec);
  if (!ec && whole.is_object() && whole.get_object().contains("messages")) {
    json::object& o = whole.get_object();
    session_id = string_of(o, "sessionId");
    unit = "message";
    if (o.at("messages").is_array()) {
      std::size_t index = 0;
      for (auto& m : o.at("messages").get_array()) {
        ++report.lines;
        ++index;
        if (m.is_object()) list.put(std::move(m.get_object()), index);
        else ++report.other_skipped;
      }
    }
  } else {
    JsonLines lines(bytes);
    while (std::optional<json::value> read = lines.next(report)) {
      const std::size_t line_no = lines.line_no();
      json::object& o = read->get_object();
      if (const json::value* set = o.if_contains("$set"); set != nullptr && set->is_object()) {
        if (const json::value* messages = set->get_object().if_contains("messages"); messages != nullptr && messages->is_array()) {
          list.reset();
          for (const auto& m : messages->get_array())
            if (m.is_object()) list.put(m.get_object(), line_no);
        } else {
          ++report.other_skipped;  // lastUpdated and other bookkeeping
        }
        continue;
      }
      if (o.contains("type") && o.contains("id")) {
        list.put(std::move(o), line_no);
        continue;
      }
      if (session_id.empty()) session_id = string_of(o, "sessionId");
      ++report.other_skipped;  // the header, an operation this version does not know
    }
  }
  std::vector<RecordedCall> calls;
  ChatImporter importer(report);
  std::vector<ImportDraft> drafts = importer.convert(list.records(), calls);
  ImportResult result = finish_import(std::move(drafts), std::move(report), unit);
  result.recorded_calls = std::move(calls);
  result.session_id = std::move(session_id);
  return result;
}

namespace wire {
namespace {

bool names_a_project(std::string_view bytes, std::string_view) { return is_gemini_chat(bytes.substr(0, 1 << 16)); }

class GeminiCliForm final : public InputForm {
 public:
  std::string_view name() const override { return "gemini-cli"; }
  std::string_view description() const override { return "a Gemini CLI chat (session-*.json or .jsonl), imported"; }
  // It has a sessionId too: asked before Claude Code's logs.
  std::vector<Detection> detections() const override { return {{220, true, &names_a_project}}; }

  Expected<InputDocument> read(std::string bytes, const InputSource& source) const override {
    return imported_document(import_gemini_chat(bytes, source.shown), anthropic_messages());
  }

  bool imports_sessions() const override { return true; }
  Expected<ImportedSession> import_session(std::string bytes, const InputSource& source) const override {
    return ImportedSession{import_gemini_chat(bytes, source.shown), &anthropic_messages(), &gemini()};
  }
};

}  // namespace

const InputForm& gemini_cli_form() {
  static const GeminiCliForm form;
  return form;
}

}  // namespace wire

}  // namespace compactor
