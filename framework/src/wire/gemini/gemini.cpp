#include "wire/gemini/gemini.hpp"

#include "wire/array_spans.hpp"
#include "wire/carried.hpp"
#include "wire/gemini/gemini_chat.hpp"
#include "wire/gemini/gemini_rules.hpp"
#include "wire/unique_call_ids.hpp"

#include "model/conversation_host.hpp"
#include "model/field_types.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace compactor::wire {
namespace {

namespace json = boost::json;
using detail::foreign_members;

// The id the adapter makes up for a call or a response that has none: where the part is
// (`contents.3.parts.1`), so a refusal names it, and stable for that place, so a history read
// again gets the same ones (the continuity key hashes them). Never written out.
std::string made_up_id(std::size_t content, std::size_t part) { return fmt::format("contents.{}.parts.{}", content, part); }

std::string kind_of(const json::value& v) { return std::string(detail::json_kind(v)); }

// The API's JSON takes a field by its lowerCamelCase name or its proto name (`function_call`).
struct Named {
  const json::value* value = nullptr;
  std::string_view key;
};
Named member(const json::object& o, std::string_view camel, std::string_view snake) {
  if (const json::value* v = o.if_contains(camel)) return {v, camel};
  if (const json::value* v = o.if_contains(snake)) return {v, snake};
  return {};
}

bool is_true(const json::value* v) { return v != nullptr && v->is_bool() && v->get_bool(); }

// Where a functionResponse part came from, and how its `response` was read as the result's text.
struct ResultOrigin {
  std::size_t content = 0, part = 0;
  std::string key;           // the part's functionResponse member: functionResponse or function_response
  std::string response_key;  // the response's one string member read as the text; empty: the whole response
};

class GeminiRequest final : public WireRequest {
 public:
  const Conversation& conversation() const override { return *conversation_; }
  Expected<std::string> write(const Conversation& compacted) const override;
  std::string pass_reason() const override { return pass; }

  std::shared_ptr<const std::string> body;
  ArraySpans spans;                                       // the elements of `contents`
  std::vector<std::vector<int>> block_parts;              // per message, each block's part (-1: the Content's fields)
  std::unordered_set<std::string> made_up;                // ids this read made up
  std::unordered_map<std::string, ResultOrigin> origins;  // tool_use_id → its functionResponse part
  std::unordered_map<std::string, std::pair<std::size_t, std::size_t>> results;  // tool_use_id → (message, block)
  std::unordered_map<std::string_view, std::vector<std::size_t>> by_raw;         // message bytes → indices
  std::optional<Conversation> conversation_;
  std::string pass;

 private:
  std::string_view part_bytes(std::size_t content, std::size_t part) const;
  const std::unordered_map<std::string, std::string_view>& parts_by_block() const;
  Expected<std::string> result_part(const Block& b) const;
  Expected<std::string> converted(const Message& m) const;

  mutable std::vector<std::optional<std::vector<std::string_view>>> part_spans_;
  mutable std::optional<std::unordered_map<std::string, std::string_view>> parts_by_block_;
};

std::string_view GeminiRequest::part_bytes(std::size_t content, std::size_t part) const {
  if (part_spans_.size() < spans.items.size()) part_spans_.resize(spans.items.size());
  auto& cached = part_spans_[content];
  if (!cached) {
    auto found = array_member_spans(spans.items[content], "parts");
    cached = found ? std::move(found->items) : std::vector<std::string_view>{};
  }
  return part < cached->size() ? (*cached)[part] : std::string_view();
}

// Each input block's JSON → its part's bytes: what lets a part the pipeline left alone go out as
// the client sent it inside a Content that changed. Built on the first such write only, and
// without the responses (result_part finds those by their call's id).
const std::unordered_map<std::string, std::string_view>& GeminiRequest::parts_by_block() const {
  if (parts_by_block_) return *parts_by_block_;
  parts_by_block_.emplace();
  const auto& original = ConversationHost::layout(conversation_->frame()).original;
  for (std::size_t i = 0; i < original.size() && i < block_parts.size(); ++i) {
    const auto& blocks = original[i]->blocks();
    for (std::size_t j = 0; j < blocks.size() && j < block_parts[i].size(); ++j)
      if (block_parts[i][j] >= 0 && blocks[j].json() != nullptr && blocks[j].kind() != BlockKind::tool_result)
        parts_by_block_->emplace(json::serialize(*blocks[j].json()), part_bytes(i, static_cast<std::size_t>(block_parts[i][j])));
  }
  return *parts_by_block_;
}

Expected<std::string> text_of_result(const Block& b) {
  const json::value* content = b.content();
  if (content == nullptr) return std::string();
  if (content->is_string()) return std::string(content->get_string());
  std::string text;
  if (content->is_array())
    for (const auto& inner : content->get_array()) {
      const json::object* o = inner.if_object();
      const json::value* t = o != nullptr ? o->if_contains("text") : nullptr;
      if (t == nullptr || !t->is_string()) return Error{"a tool result holding a non-text block has no Gemini form"};
      text += (text.empty() ? "" : "\n") + std::string(t->get_string());
    }
  return text;
}

Expected<std::string> GeminiRequest::result_part(const Block& b) const {
  const std::string id(b.tool_use_id());
  auto text = text_of_result(b);
  if (!text) return text.error();
  auto origin = origins.find(id);
  auto original = results.find(id);
  if (origin != origins.end() && original != results.end()) {
    const Block& before = conversation_->messages()[original->second.first]->blocks()[original->second.second];
    std::string_view bytes = part_bytes(origin->second.content, origin->second.part);
    if (!bytes.empty()) {
      if (*before.json() == *b.json()) return std::string(bytes);
      // Only the content changed (the rules and carried_unchanged hold the rest): the client's
      // part with its response's text replaced.
      const ResultOrigin& o = origin->second;
      std::optional<detail::JsonSpan> span;
      std::string replaced;
      if (!o.response_key.empty()) {
        span = detail::find_value_span(bytes, {{o.key}, {"response"}, {o.response_key}});
        replaced = json::serialize(json::string(*text));
      } else {
        span = detail::find_value_span(bytes, {{o.key}, {"response"}});
        replaced = json::serialize(json::object{{"output", *text}});
      }
      if (span) return std::string(bytes.substr(0, span->begin)) + replaced + std::string(bytes.substr(span->end));
    }
  }
  // A result with none of the client's bytes: built from what it carries.
  json::object part;
  json::object response;
  if (!made_up.count(id)) response.emplace("id", id);
  const json::value* carried = b.field(kCarriedMember);
  if (carried != nullptr && carried->is_object())
    for (const auto& kv : carried->get_object()) {
      if (kv.key() != "functionResponse") part.emplace(kv.key(), kv.value());
      else if (kv.value().is_object())
        for (const auto& f : kv.value().get_object()) response.emplace(f.key(), f.value());
    }
  response["response"] = json::object{{"output", *text}};
  json::object out{{"functionResponse", std::move(response)}};
  for (const auto& kv : part) out.emplace(kv.key(), kv.value());
  return json::serialize(out);
}

// A part for a block that has none of the client's bytes (a stage built or changed it).
Expected<std::string> fresh_part(const Block& b, const std::unordered_set<std::string>& made_up) {
  if (b.json() == nullptr) return json::serialize(json::object{{"text", b.text()}});
  const json::value* carried = b.field(kCarriedMember);
  const json::object* members = carried != nullptr ? carried->if_object() : nullptr;
  if (is_carried(b)) {
    const json::value* v = b.field("value");
    return v != nullptr ? json::serialize(*v) : std::string("{}");
  }
  if (b.kind() == BlockKind::text) {
    json::object part{{"text", b.text()}};
    if (members != nullptr)
      for (const auto& kv : *members) part.emplace(kv.key(), kv.value());
    return json::serialize(part);
  }
  if (b.kind() == BlockKind::tool_use) {
    json::object call;
    if (!made_up.count(std::string(b.id()))) call.emplace("id", b.id());
    call.emplace("name", b.name());
    call.emplace("args", b.input() != nullptr ? *b.input() : json::value(json::object{}));
    json::object part;
    if (members != nullptr)
      for (const auto& kv : *members) {
        if (kv.key() != "functionCall") part.emplace(kv.key(), kv.value());
        else if (kv.value().is_object())
          for (const auto& f : kv.value().get_object()) call[f.key()] = f.value();
      }
    json::object out{{"functionCall", std::move(call)}};
    for (const auto& kv : part) out.emplace(kv.key(), kv.value());
    return json::serialize(out);
  }
  return Error{fmt::format("a {} block has no Gemini form", b.type())};
}

Expected<std::string> GeminiRequest::converted(const Message& m) const {
  std::string fields, parts;
  for (const Block& b : m.blocks()) {
    if (is_carried(b) && b.string_field("of") == "fields") {
      if (const json::value* v = b.field("value"); v != nullptr && v->is_object())
        for (const auto& kv : v->get_object())
          fields += json::serialize(json::string(kv.key())) + ":" + json::serialize(kv.value()) + ",";
      continue;
    }
    std::string part;
    if (b.kind() == BlockKind::tool_result) {
      auto p = result_part(b);
      if (!p) return p.error();
      part = std::move(*p);
    } else if (b.json() != nullptr) {
      const auto& known = parts_by_block();
      if (auto it = known.find(json::serialize(*b.json())); it != known.end()) part = std::string(it->second);
    }
    if (part.empty()) {
      auto p = fresh_part(b, made_up);
      if (!p) return p.error();
      part = std::move(*p);
    }
    parts += (parts.empty() ? "" : ",") + part;
  }
  return "{" + fields + "\"role\":\"" + (m.role() == Role::assistant ? "model" : "user") + "\",\"parts\":[" + parts + "]}";
}

Expected<std::string> GeminiRequest::write(const Conversation& compacted) const {
  std::string_view text = *body;
  // Nothing changed: the client's body itself, whatever its spacing between Contents.
  const auto& original = conversation_->messages();
  bool same = compacted.size() == original.size();
  for (std::size_t i = 0; same && i < original.size(); ++i) same = compacted[i].raw() == original[i]->raw();
  if (same) return std::string(text);
  std::string out(text.substr(0, spans.open + 1));
  bool first = true;
  auto add = [&](std::string_view bytes) {
    if (!first) out += ',';
    out += bytes;
    first = false;
  };
  std::size_t next = 0;
  for (std::size_t i = 0; i < compacted.size(); ++i) {
    const Message& m = compacted[i];
    auto found = by_raw.find(m.raw());
    if (found != by_raw.end()) {
      std::size_t index = found->second.front();
      for (std::size_t candidate : found->second)
        if (candidate >= next) {
          index = candidate;
          break;
        }
      add(spans.items[index]);
      next = index + 1;
      continue;
    }
    auto written = converted(m);
    if (!written) return Error{fmt::format("contents.{}: {}", i, written.error().message)};
    add(*written);
  }
  out += text.substr(spans.close);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Gemini form → model form.

class Reader {
 public:
  Reader(GeminiRequest& r, const std::string& source) : r_(r), source_(source) {}

  Expected<bool> read(const json::array& contents);
  std::vector<MessagePtr>& messages() { return messages_; }

 private:
  struct Call {
    std::string id, name;
    bool client_id = false;
    bool answered = false;
  };

  std::string where(std::size_t i) const { return fmt::format("{}: contents.{}", source_, i); }
  Expected<json::value> call_block(const json::object& part, const Named& fc, std::size_t i, std::size_t k, std::vector<Call>& calls);
  Expected<json::value> response_block(const json::object& part, const Named& fr, std::size_t i, std::size_t k, std::size_t message,
                                       std::size_t block);

  GeminiRequest& r_;
  const std::string& source_;
  std::vector<MessagePtr> messages_;
  std::vector<Call> previous_;  // the calls of the Content before, when it is a model turn
};

Expected<json::value> Reader::call_block(const json::object& part, const Named& fc, std::size_t i, std::size_t k,
                                         std::vector<Call>& calls) {
  const std::string at = fmt::format("{}.parts.{}.{}", where(i), k, fc.key);
  const json::object* f = fc.value->if_object();
  if (f == nullptr) return Error{at + " must be an object, got " + kind_of(*fc.value)};
  const json::value* name = f->if_contains("name");
  if (name == nullptr || !name->is_string()) return Error{at + ".name must be a string"};
  const json::value* id = f->if_contains("id");
  Call call{"", std::string(name->get_string()), id != nullptr && id->is_string() && !id->get_string().empty(), false};
  if (call.client_id) {
    call.id = std::string(id->get_string());
  } else {
    call.id = made_up_id(i, k);
    r_.made_up.insert(call.id);
  }
  json::object carried = foreign_members(part, {fc.key});
  json::object call_members = foreign_members(*f, {"id", "name", "args"});
  if (id != nullptr && !call.client_id) call_members.emplace("id", *id);  // an empty or odd id, kept as it came
  json::value input = json::object{};
  if (const json::value* args = f->if_contains("args")) {
    if (args->is_object()) input = *args;
    else call_members.emplace("args", *args);
  }
  if (!call_members.empty()) carried.emplace("functionCall", std::move(call_members));
  json::object use{{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", std::move(input)}};
  if (!carried.empty()) use.emplace(kCarriedMember, std::move(carried));
  calls.push_back(std::move(call));
  return json::value(std::move(use));
}

Expected<json::value> Reader::response_block(const json::object& part, const Named& fr, std::size_t i, std::size_t k,
                                             std::size_t message, std::size_t block) {
  const std::string at = fmt::format("{}.parts.{}.{}", where(i), k, fr.key);
  const json::object* f = fr.value->if_object();
  if (f == nullptr) return Error{at + " must be an object, got " + kind_of(*fr.value)};
  const json::value* name = f->if_contains("name");
  if (name == nullptr || !name->is_string()) return Error{at + ".name must be a string"};
  const json::value* idv = f->if_contains("id");
  const bool has_id = idv != nullptr && idv->is_string() && !idv->get_string().empty();
  // The call it answers: by id where the response has one, else the first unanswered call of
  // its name (Gemini CLI sends its calls' ids and none on the responses). A response whose id
  // names no call may still answer a call that came without one, by name.
  std::string id;
  auto take = [&](auto matches) {
    for (Call& c : previous_)
      if (!c.answered && matches(c)) {
        c.answered = true;
        id = c.id;
        return true;
      }
    return false;
  };
  if (has_id) {
    if (!take([&](const Call& c) { return c.client_id && c.id == idv->get_string(); }))
      take([&](const Call& c) { return !c.client_id && c.name == name->get_string(); });
  } else {
    take([&](const Call& c) { return c.name == name->get_string(); });
  }
  if (id.empty() && has_id) id = std::string(idv->get_string());
  if (id.empty()) r_.made_up.insert(id = made_up_id(i, k));

  ResultOrigin origin{i, k, std::string(fr.key), ""};
  json::value content = "";
  if (const json::value* response = f->if_contains("response")) {
    const json::object* o = response->if_object();
    if (o != nullptr && o->size() == 1 && o->begin()->value().is_string()) {
      origin.response_key = std::string(o->begin()->key());
      content = o->begin()->value();
    } else {
      content = json::string(json::serialize(*response));
    }
  }
  json::object carried = foreign_members(part, {fr.key});
  json::object response_members = foreign_members(*f, {"id", "response"});
  if (idv != nullptr && !has_id) response_members.emplace("id", *idv);
  carried.emplace("functionResponse", std::move(response_members));
  json::object result{{"type", "tool_result"}, {"tool_use_id", id}, {"content", std::move(content)}, {kCarriedMember, std::move(carried)}};
  r_.origins[id] = std::move(origin);
  r_.results[id] = {message, block};
  return json::value(std::move(result));
}

Expected<bool> Reader::read(const json::array& contents) {
  for (std::size_t i = 0; i < contents.size(); ++i) {
    const json::object* o = contents[i].if_object();
    if (o == nullptr) return Error{where(i) + " must be an object, got " + kind_of(contents[i])};
    Role role = Role::user;  // "If not set, the service will default to 'user'."
    if (const json::value* r = o->if_contains("role")) {
      if (!r->is_string()) return Error{where(i) + ".role must be a string, got " + kind_of(*r)};
      if (r->get_string() == "model") role = Role::assistant;
      else if (r->get_string() != "user")
        return Error{fmt::format("{}.role \"{}\": the Gemini API takes \"user\" or \"model\" (rule gemini_turns)", where(i),
                                 std::string_view(r->get_string()))};
    }
    const json::value* parts = o->if_contains("parts");
    if (parts == nullptr || !parts->is_array())
      return Error{where(i) + ".parts must be an array of parts" + (parts != nullptr ? ", got " + kind_of(*parts) : "")};
    if (parts->get_array().empty())
      return Error{where(i) + ".parts is empty: a Content must have at least one Part (rule gemini_turns)"};

    json::array blocks;
    std::vector<int> block_parts;
    if (json::object fields = foreign_members(*o, {"role", "parts"}); !fields.empty()) {
      blocks.push_back(carried_block("fields", std::move(fields)));
      block_parts.push_back(-1);
    }
    std::vector<Call> calls;
    const json::array& list = parts->get_array();
    for (std::size_t k = 0; k < list.size(); ++k) {
      const json::object* part = list[k].if_object();
      if (part == nullptr) return Error{fmt::format("{}.parts.{} must be an object, got {}", where(i), k, kind_of(list[k]))};
      Named fc = member(*part, "functionCall", "function_call");
      Named fr = member(*part, "functionResponse", "function_response");
      const json::value* text = part->if_contains("text");
      Expected<json::value> block = json::value();
      if (fc.value != nullptr && fr.value == nullptr) {
        block = call_block(*part, fc, i, k, calls);
      } else if (fr.value != nullptr && fc.value == nullptr) {
        block = response_block(*part, fr, i, k, messages_.size(), blocks.size());
      } else if (text != nullptr && text->is_string() && !is_true(part->if_contains("thought"))) {
        json::object t{{"type", "text"}, {"text", *text}};
        if (json::object rest = foreign_members(*part, {"text"}); !rest.empty()) t.emplace(kCarriedMember, std::move(rest));
        block = json::value(std::move(t));
      } else {
        // Inline or file data, code and its result, the model's thoughts, a kind the API added
        // later: carried whole; a thought or a part with a signature is the model's reasoning.
        const bool reasoning = is_true(part->if_contains("thought")) || member(*part, "thoughtSignature", "thought_signature").value != nullptr;
        block = json::value(carried_block("part", *part, reasoning));
      }
      if (!block) return block.error();
      blocks.push_back(std::move(*block));
      block_parts.push_back(static_cast<int>(k));
    }
    auto m = Message::from_json(json::object{{"role", role == Role::assistant ? "assistant" : "user"}, {"content", std::move(blocks)}});
    if (!m) return Error{fmt::format("{}: {}", where(i), m.error().message)};
    messages_.push_back(std::move(*m));
    r_.block_parts.push_back(std::move(block_parts));
    previous_ = role == Role::assistant ? std::move(calls) : std::vector<Call>{};
  }
  return true;
}

bool has_function_declarations(const json::object& body) {
  const json::value* tools = body.if_contains("tools");
  if (tools == nullptr || !tools->is_array()) return false;
  for (const auto& t : tools->get_array()) {
    const json::object* o = t.if_object();
    if (o == nullptr) continue;
    Named d = member(*o, "functionDeclarations", "function_declarations");
    if (d.value != nullptr && d.value->is_array() && !d.value->get_array().empty()) return true;
  }
  return false;
}

// Why serve passes the request through (empty: the agent's conversation, compacted).
std::string pass_reason_of(const json::object& body) {
  if (Named cached = member(body, "cachedContent", "cached_content"); cached.value != nullptr && !cached.value->is_null())
    return "it names a server-side cachedContent, whose contents are not in the request";
  if (Named config = member(body, "generationConfig", "generation_config"); config.value != nullptr && config.value->is_object()) {
    const json::object& g = config.value->get_object();
    for (std::string_view key : {"responseSchema", "response_schema", "responseJsonSchema", "response_json_schema", "_responseJsonSchema"})
      if (g.contains(key)) return "it asks for a structured answer (generationConfig." + std::string(key) + "): a router's or a utility's call";
  }
  if (!has_function_declarations(body)) return "it declares no functions: a router's or a utility's call, not an agent's conversation";
  return {};
}

bool ends_with_method(std::string_view path, std::string_view& model) {
  for (std::string_view method : {":generateContent", ":streamGenerateContent"})
    if (path.ends_with(method)) {
      model = path.substr(0, path.size() - method.size());
      return true;
    }
  return false;
}

// A Gemini API request body: an object whose `contents` hold `parts` (and no `messages`), told
// apart by its start, before any detection that looks for other APIs' words in its text.
bool is_gemini_body(std::string_view bytes, std::string_view) {
  const std::size_t start = bytes.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || bytes[start] != '{') return false;
  std::string_view head = bytes.substr(start, 1 << 16);
  const std::size_t contents = head.find("\"contents\"");
  return contents != std::string_view::npos && head.find("\"parts\"", contents) != std::string_view::npos &&
         head.find("\"messages\"") == std::string_view::npos && !is_gemini_chat(head);
}

class GeminiRequestForm final : public InputForm {
 public:
  std::string_view name() const override { return "gemini"; }
  std::string_view description() const override { return "a Gemini API request body (contents with parts)"; }
  std::vector<Detection> detections() const override { return {{100, false, &is_gemini_body}}; }
  Expected<InputDocument> read(std::string bytes, const InputSource& source) const override {
    return request_document(gemini(), std::move(bytes), source.shown);
  }
};

class Gemini final : public WireFormat {
 public:
  std::string_view name() const override { return "gemini"; }
  std::string_view route() const override { return "gemini"; }
  std::string_view title() const override { return "Gemini"; }
  std::string_view endpoint() const override {
    return "POST /v1beta/models/M:generateContent (and :streamGenerateContent, /v1/, /v1alpha/)";
  }
  std::string_view upstream_key() const override { return "gemini"; }
  std::string_view default_upstream() const override { return "https://generativelanguage.googleapis.com"; }

  std::string model_in_path(std::string_view path) const override {
    std::string_view model;
    if (!ends_with_method(path, model)) return {};
    return std::string(model.substr(model.rfind('/') + 1));
  }

  // The Gemini API's other methods and paths (countTokens, models, files, uploads, caches).
  bool owns(std::string_view, std::string_view path) const override { return is_gemini_api_path(path); }

  bool handles(std::string_view method, std::string_view path) const override {
    std::string_view model;
    if (method != "POST" || !ends_with_method(path, model)) return false;
    for (std::string_view version : {"/v1beta/", "/v1/", "/v1alpha/"}) {
      if (!model.starts_with(version)) continue;
      std::string_view rest = model.substr(version.size());
      for (std::string_view collection : {"models/", "tunedModels/"})
        if (rest.starts_with(collection) && rest.size() > collection.size() &&
            rest.substr(collection.size()).find('/') == std::string_view::npos)
          return true;
    }
    return false;
  }

  Expected<std::unique_ptr<WireRequest>> read(std::string body, const std::string& source) const override {
    auto request = std::make_unique<GeminiRequest>();
    request->body = std::make_shared<const std::string>(std::move(body));
    const std::string_view text = *request->body;
    boost::system::error_code ec;
    json::value doc = detail::parse_json(text, ec);
    const json::object* o = !ec ? doc.if_object() : nullptr;
    const json::value* contents = o != nullptr ? o->if_contains("contents") : nullptr;
    auto spans = contents != nullptr && contents->is_array() ? array_member_spans(text, "contents") : std::nullopt;
    if (!spans || spans->items.size() != contents->get_array().size())
      return Error{source + ": not a Gemini generateContent request (an object with a contents array)"};
    if (spans->items.empty()) return Error{source + ": contents is empty: the Gemini API needs at least one Content"};
    request->spans = std::move(*spans);
    request->pass = pass_reason_of(*o);
    Reader reader(*request, source);
    if (auto read = reader.read(contents->get_array()); !read) return read.error();

    // The frame: systemInstruction and tools count in the budget, as sent.
    auto frame = std::make_shared<ConversationFrame>();
    frame->format = InputFormat::request_body;
    FrameLayout layout;  // a bare array's, over the client's body
    layout.buffer = request->body;
    for (std::string_view key : {"systemInstruction", "system_instruction", "tools"})
      if (auto span = detail::find_value_span(text, {{key}})) {
        std::string_view json_text = text.substr(span->begin, span->end - span->begin);
        frame->fixed += Sizes{count_code_points(json_text), json_text.size()};
        layout.fixed_json.push_back(json_text);
      }
    layout.original = reader.messages();
    ConversationHost::set_layout(*frame, std::move(layout));
    Conversation conversation = ConversationHost::make(frame, reader.messages());
    for (std::size_t i = 0; i < conversation.size(); ++i) request->by_raw[conversation[i].raw()].push_back(i);
    request->conversation_.emplace(std::move(conversation));
    return std::unique_ptr<WireRequest>(std::move(request));
  }

  std::vector<CheckerPtr> rules() const override {
    std::vector<CheckerPtr> rules;
    rules.push_back(make_gemini_turns_checker());
    rules.push_back(make_gemini_function_responses_checker());
    rules.push_back(make_gemini_thought_signatures_checker());
    rules.push_back(make_unique_call_ids_checker());
    rules.push_back(make_carried_unchanged_checker());
    return rules;
  }

  // 400 INVALID_ARGUMENT, "The input token count (1200293) exceeds the maximum number of tokens
  // allowed (1048576)."
  bool context_refusal(int status, std::string_view body) const override {
    return status == 400 && body.find("input token count") != std::string_view::npos &&
           body.find("exceeds the maximum") != std::string_view::npos;
  }

  // Google's error shape: {"error": {"code", "message", "status"}}.
  ErrorReply error_reply(ProxyError kind, std::string_view message) const override {
    auto reply = [&](int status, std::string_view name) {
      return ErrorReply{status, json::serialize(json::object{{"error", json::object{{"code", status}, {"message", message}, {"status", name}}}})};
    };
    switch (kind) {
      case ProxyError::overloaded: return reply(503, "UNAVAILABLE");
      case ProxyError::body_too_large: return reply(413, "INVALID_ARGUMENT");
      case ProxyError::upstream_failed: return reply(502, "UNAVAILABLE");
      case ProxyError::pipeline_failed: return reply(500, "INTERNAL");
      case ProxyError::bad_request: return reply(400, "INVALID_ARGUMENT");
      case ProxyError::unauthorized: return reply(401, "UNAUTHENTICATED");
      case ProxyError::websocket_refused: return reply(426, "FAILED_PRECONDITION");
    }
    return reply(500, "INTERNAL");
  }

  std::vector<const InputForm*> input_forms() const override {
    static const GeminiRequestForm request;
    return {&request, &gemini_cli_form()};
  }
};

}  // namespace

const WireFormat& gemini() {
  static const Gemini format;
  return format;
}

bool is_gemini_api_path(std::string_view path) {
  for (std::string_view prefix : {"/v1beta/", "/v1alpha/", "/upload/v1beta/", "/download/v1beta/"})
    if (path.starts_with(prefix)) return true;
  // The stable version shares /v1/ with other APIs: its model methods are `models/<m>:method`.
  return path.starts_with("/v1/models/") && path.find(':') != std::string_view::npos;
}

}  // namespace compactor::wire
