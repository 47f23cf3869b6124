#include "wire/openai_responses/openai_responses.hpp"

#include "wire/array_spans.hpp"
#include "wire/anthropic/messages_rules.hpp"
#include "wire/carried.hpp"
#include "wire/context_management.hpp"
#include "wire/openai_chat/openai_chat.hpp"
#include "wire/openai_responses/codex_session.hpp"
#include "wire/openai_responses/responses_rules.hpp"
#include "wire/openai_responses/responses_items.hpp"
#include "wire/unique_call_ids.hpp"

#include "model/conversation_host.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <functional>
#include <unordered_map>

namespace compactor::wire {
namespace {

namespace json = boost::json;

// A bare items array is read as the request body that holds it.
constexpr std::string_view kBareOpen = "{\"input\":";

using Add = std::function<void(std::string_view)>;

void merge_members(json::object& into, const json::value* members) {
  if (members != nullptr && members->is_object())
    for (const auto& kv : members->get_object()) into.insert_or_assign(kv.key(), kv.value());
}

// A block (its JSON) as a content part of `role`'s message: a text block as that role's text part
// with what it carried, a carried part as it came.
Expected<json::value> part_of_block(const json::object& b, std::string_view role) {
  const json::value* type = b.if_contains("type");
  if (type != nullptr && type->is_string() && type->get_string() == kCarriedType) return b.at("value");
  if (type == nullptr || *type != "text") return Error{"a block that is not text has no Responses content part form"};
  json::object part{{"type", role == "assistant" ? "output_text" : "input_text"}, {"text", b.at("text")}};
  if (role == "assistant") part.emplace("annotations", json::array());
  merge_members(part, b.if_contains(kCarriedMember));
  return json::value(std::move(part));
}

// A tool_result's content as an output: a string stays one, blocks are input parts.
Expected<json::value> output_of(const Block& b) {
  const json::value* content = b.content();
  if (content == nullptr) return json::value("");
  if (!content->is_array()) return *content;
  json::array parts;
  for (const json::value& inner : content->get_array()) {
    if (!inner.is_object()) return Error{"a tool_result's content holds a value that is not a block"};
    auto part = part_of_block(inner.get_object(), "user");
    if (!part) return part.error();
    parts.push_back(std::move(*part));
  }
  return json::value(std::move(parts));
}

class ResponsesRequest final : public WireRequest {
 public:
  const Conversation& conversation() const override { return *history.conversation; }
  Expected<std::string> write(const Conversation& compacted) const override;

  std::shared_ptr<const std::string> body;
  bool bare = false;
  ArraySpans spans;
  ResponsesHistory history;
  std::unordered_map<std::string_view, std::vector<std::size_t>> by_raw;  // model message bytes → indices

 private:
  Expected<bool> write_converted(const Message& m, const Add& add) const;
  Expected<bool> write_result(const Block& b, const Add& add) const;
};

// An edited output: the client's item with only its output replaced (pairs_unchanged and
// carried_unchanged hold the rest); an output the model form cannot hold goes out as it came.
Expected<bool> ResponsesRequest::write_result(const Block& b, const Add& add) const {
  const std::string id(b.tool_use_id());
  auto item = history.result_items.find(id);
  auto original = history.results.find(id);
  if (item != history.result_items.end() && original != history.results.end()) {
    const Block& before = history.conversation->messages()[original->second.first]->blocks()[original->second.second];
    std::string_view bytes = spans.items[item->second];
    const json::value* carried = before.field(kCarriedMember);
    const bool opaque_output = carried != nullptr && carried->is_object() && carried->get_object().contains("output");
    if (*before.json() == *b.json() || opaque_output) {
      add(bytes);
      return true;
    }
    auto span = detail::find_value_span(bytes, {{"output"}});
    auto replaced = output_of(b);
    if (!replaced) return replaced.error();
    if (span) {
      add(std::string(bytes.substr(0, span->begin)) + json::serialize(*replaced) + std::string(bytes.substr(span->end)));
      return true;
    }
  }
  json::object out{{"type", "function_call_output"}, {"call_id", id}};
  merge_members(out, b.field(kCarriedMember));
  auto replaced = output_of(b);
  if (!replaced) return replaced.error();
  out.insert_or_assign("output", std::move(*replaced));
  add(json::serialize(out));
  return true;
}

Expected<bool> ResponsesRequest::write_converted(const Message& m, const Add& add) const {
  const std::string_view role = m.role() == Role::assistant ? "assistant" : "user";
  if (m.content_is_string()) {
    add(json::serialize(json::object{{"role", role}, {"content", m.blocks().front().text()}}));
    return true;
  }
  // A message item being built: its fields (the client's, from a carried fields block) and parts.
  std::optional<json::object> open;
  json::array parts;
  bool from_client = false;
  std::string text;  // a stage's assistant text, written as a string
  auto close = [&] {
    if (!open) return;
    if (role == "assistant" && !from_client) open->emplace("content", text);
    else open->insert_or_assign("content", std::move(parts));
    add(json::serialize(*open));
    open.reset();
    parts = json::array();
    text.clear();
  };
  auto start = [&](const json::value* fields) {
    close();
    open.emplace(json::object{});
    if (fields != nullptr && fields->is_object()) {
      open->emplace("type", "message");
      merge_members(*open, fields);
      from_client = true;
    } else {
      from_client = false;
    }
    open->insert_or_assign("role", role);
  };
  for (const Block& b : m.blocks()) {
    if (b.kind() == BlockKind::tool_result) {
      close();
      if (auto w = write_result(b, add); !w) return w;
      continue;
    }
    if (is_carried(b) && b.string_field("of") == "fields") {
      start(b.field("value"));
      continue;
    }
    if (is_carried(b) && b.string_field("of") != "part") {  // a whole item: reasoning, an unknown item
      close();
      add(json::serialize(*b.field("value")));
      continue;
    }
    if (b.kind() == BlockKind::tool_use) {
      close();
      json::object call;
      const json::value* carried = b.field(kCarriedMember);
      merge_members(call, carried);
      const json::object* c = carried != nullptr ? carried->if_object() : nullptr;
      const json::value* type = c != nullptr ? c->if_contains("type") : nullptr;
      const std::string_view kind = type != nullptr && type->is_string() ? std::string_view(type->get_string()) : "function_call";
      call.insert_or_assign("type", kind);
      call.insert_or_assign("call_id", b.id());
      if (kind == "function_call" || kind == "custom_tool_call") call.insert_or_assign("name", b.name());
      if (kind == "function_call" && !call.contains("arguments"))
        call.emplace("arguments", json::serialize(b.input() != nullptr ? *b.input() : json::value(json::object{})));
      if (kind == "custom_tool_call" && !call.contains("input") && b.input() != nullptr && b.input()->is_object())
        if (const json::value* input = b.input()->get_object().if_contains("input")) call.emplace("input", *input);
      add(json::serialize(call));
      continue;
    }
    if (b.kind() != BlockKind::text && !is_carried(b))
      return Error{fmt::format("a {} block has no Responses API form", b.type())};
    if (!open) start(nullptr);
    if (role == "assistant" && !from_client && b.kind() == BlockKind::text) {
      text += (text.empty() ? "" : "\n") + std::string(b.text());
      continue;
    }
    auto part = part_of_block(*b.json(), role);
    if (!part) return part.error();
    parts.push_back(std::move(*part));
  }
  close();
  return true;
}

Expected<std::string> ResponsesRequest::write(const Conversation& compacted) const {
  std::string_view text = *body;
  if (ConversationHost::unchanged_from_input(compacted))
    return bare ? std::string(text.substr(kBareOpen.size(), text.size() - kBareOpen.size() - 1)) : std::string(text);
  // Items are separated as the client separated its first two.
  std::string_view separator = ",";
  if (spans.items.size() > 1) {
    const char* end = spans.items[0].data() + spans.items[0].size();
    separator = std::string_view(end, static_cast<std::size_t>(spans.items[1].data() - end));
  }
  std::string out(text.substr(0, spans.open + 1));
  bool first = true;
  Add add = [&](std::string_view bytes) {
    if (!first) out += separator;
    out += bytes;
    first = false;
  };
  for (std::size_t k = 0; k < history.head; ++k) add(spans.items[k]);
  const std::vector<std::size_t>& slots = compacted.system_slots();
  std::size_t entry = 0, next = 0;
  for (std::size_t i = 0; i <= compacted.size(); ++i) {
    for (; entry < slots.size() && slots[entry] != Conversation::kUnplaced && slots[entry] <= i; ++entry)
      add(spans.items[history.entry_items[entry]]);
    if (i == compacted.size()) break;
    const Message& m = compacted[i];
    auto found = by_raw.find(m.raw());
    if (found != by_raw.end()) {
      std::size_t index = found->second.front();
      for (std::size_t candidate : found->second)
        if (candidate >= next) {
          index = candidate;
          break;
        }
      for (std::size_t k = history.origins[index].first; k < history.origins[index].last; ++k) add(spans.items[k]);
      next = index + 1;
      continue;
    }
    auto written = write_converted(m, add);
    if (!written) return Error{fmt::format("messages.{}: {}", i, written.error().message)};
  }
  for (; entry < slots.size(); ++entry) add(spans.items[history.entry_items[entry]]);  // unplaced: never lost
  out += text.substr(spans.close);
  if (bare) return out.substr(kBareOpen.size(), out.size() - kBareOpen.size() - 1);
  return out;
}

bool present(std::string_view body, std::string_view key) {
  auto span = detail::find_value_span(body, {{std::string(key)}});
  return span && body.substr(span->begin, span->end - span->begin) != "null";
}

// A Responses request: an object with an input array and no messages, or an items array typed as
// only the Responses API types them (input_text, output_text, function_call, reasoning…).
bool is_responses_request(std::string_view bytes, std::string_view) {
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

class ResponsesRequestForm final : public InputForm {
 public:
  std::string_view name() const override { return "responses"; }
  std::string_view description() const override { return "an OpenAI Responses request body or input items array"; }
  std::vector<Detection> detections() const override { return {{310, false, &is_responses_request}}; }
  Expected<InputDocument> read(std::string bytes, const InputSource& source) const override {
    return request_document(openai_responses(), std::move(bytes), source.shown);
  }
};

class OpenAiResponses final : public WireFormat {
 public:
  std::string_view name() const override { return "openai_responses"; }
  std::string_view route() const override { return "responses"; }
  std::string_view title() const override { return "OpenAI Responses"; }
  std::string_view endpoint() const override { return "POST /v1/responses"; }
  std::string_view upstream_key() const override { return "openai"; }
  std::string_view default_upstream() const override { return "https://api.openai.com"; }

  bool handles(std::string_view method, std::string_view path) const override {
    return method == "POST" && path == "/v1/responses";
  }

  // Another endpoint of the API (compact, a stored response, its input items, cancel), or the
  // WebSocket mode's upgrade on the same path.
  bool owns(std::string_view method, std::string_view path) const override {
    return path.starts_with("/v1/responses/") || (path == "/v1/responses" && method == "GET");
  }

  std::optional<std::string> passed_through(std::string_view body) const override {
    if (present(body, "previous_response_id")) return "previous_response_id: the upstream holds the history";
    if (present(body, "conversation")) return "conversation: the upstream holds the history";
    return std::nullopt;
  }

  bool refuses_in_stream() const override { return true; }

  Expected<std::unique_ptr<WireRequest>> read(std::string body, const std::string& source) const override {
    auto request = std::make_unique<ResponsesRequest>();
    const std::size_t start = body.find_first_not_of(" \t\r\n");
    request->bare = start != std::string::npos && body[start] == '[';
    if (request->bare) body = std::string(kBareOpen) + body + "}";
    request->body = std::make_shared<const std::string>(std::move(body));
    const std::string_view text = *request->body;
    boost::system::error_code ec;
    json::value doc = detail::parse_json(text, ec);
    const json::object* o = !ec ? doc.if_object() : nullptr;
    const json::value* input = o != nullptr ? o->if_contains("input") : nullptr;
    if (input != nullptr && input->is_string())
      return Error{source + ": input: a string input is one user message, with no history to compact"};
    auto spans = input != nullptr && input->is_array() ? array_member_spans(text, "input") : std::nullopt;
    if (!spans || spans->items.size() != input->get_array().size())
      return Error{source + ": not an OpenAI Responses request (an object with an input array) nor an input items array"};
    if (request->bare && !is_whole_bare_array(*spans, text, kBareOpen.size()))
      return Error{fmt::format("{}: offset {}: more after the {}, which must be the whole input", source,
                               spans->close + 1 - kBareOpen.size(), "input items array")};
    request->spans = std::move(*spans);
    // What else the model reads and the budget counts: the instructions and the tools, as sent.
    std::vector<std::string_view> fixed;
    for (const char* key : {"instructions", "tools"})
      if (auto span = detail::find_value_span(text, {{key}}); span && present(text, key))
        fixed.push_back(text.substr(span->begin, span->end - span->begin));
    auto history = read_responses_items(request->body, request->spans.items, input->get_array(), fixed, source + ": input");
    if (!history) return history.error();
    request->history = std::move(*history);
    const Conversation& c = *request->history.conversation;
    for (std::size_t i = 0; i < c.size(); ++i) request->by_raw[c[i].raw()].push_back(i);
    return std::unique_ptr<WireRequest>(std::move(request));
  }

  // What the Responses API refuses in a history: a call without its output later or an output
  // without its call earlier (pairing, read on the model form, where a call's outputs are the
  // next message), call ids or item ids used twice, a reasoning item without the item it
  // belongs to. And what Compactor carries (reasoning with its encrypted_content) stays as it came.
  std::vector<CheckerPtr> rules() const override {
    std::vector<CheckerPtr> rules;
    rules.push_back(detail::make_pairing_checker());
    rules.push_back(make_unique_call_ids_checker());
    rules.push_back(make_unique_item_ids_checker());
    rules.push_back(make_reasoning_followed_checker());
    rules.push_back(make_carried_unchanged_checker());
    return rules;
  }

  // `context_length_exceeded`: an HTTP 400 error, or a `response.failed` event that opens a
  // 200 event stream (what the proxy holds back until it has come).
  bool context_refusal(int status, std::string_view body) const override {
    if (body.find("context_length_exceeded") == std::string_view::npos) return false;
    if (status == 400 || status == 413) return true;
    return status / 100 == 2 && body.find("response.failed") != std::string_view::npos;
  }

  ErrorReply error_reply(ProxyError kind, std::string_view message) const override {
    return openai_error_reply(kind, message, true);
  }

  // [{"type": "compaction", …}]: the API compacts the history itself.
  std::string native_context(std::string_view body) const override {
    auto asked = context_management_of(body);
    return asked && asked->is_array() ? deferral_for(asked->get_array()) : "";
  }

  bool openai_tokenizer() const override { return true; }

  std::vector<const InputForm*> input_forms() const override {
    static const ResponsesRequestForm request;
    return {&request, &codex_form()};
  }
};

}  // namespace

const WireFormat& openai_responses() {
  static const OpenAiResponses format;
  return format;
}

}  // namespace compactor::wire
