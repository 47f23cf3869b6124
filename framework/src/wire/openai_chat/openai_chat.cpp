#include "wire/openai_chat/openai_chat.hpp"

#include "wire/array_spans.hpp"
#include "wire/anthropic/messages_rules.hpp"
#include "wire/carried.hpp"
#include "wire/openai_chat/openai_log.hpp"
#include "wire/unique_call_ids.hpp"

#include "model/conversation_host.hpp"
#include "model/field_types.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <unordered_map>

namespace compactor::wire {
namespace {

namespace json = boost::json;
using detail::foreign_members;

// The wire items (elements of `messages`) one model message was read from: a Chat message, or
// the run of tool messages that answer one assistant message.
// A bare messages array is read as the request body that holds it.
constexpr std::string_view kBareOpen = "{\"messages\":";

struct Origin {
  std::size_t first = 0, last = 0;
};

std::string kind_of(const json::value& v) { return std::string(detail::json_kind(v)); }

void carry(json::object& block, json::object members) {
  if (!members.empty()) block.emplace(kCarriedMember, std::move(members));
}

// A content part as a block: a text part as a text block (cache_control kept as the breakpoint
// it is, its other members carried); any other part carried whole.
json::value block_of_part(const json::value& part) {
  const json::object* o = part.if_object();
  const json::value* type = o != nullptr ? o->if_contains("type") : nullptr;
  const json::value* text = o != nullptr ? o->if_contains("text") : nullptr;
  if (type == nullptr || !type->is_string() || type->get_string() != "text" || text == nullptr || !text->is_string())
    return carried_block("part", part);
  json::object block{{"type", "text"}, {"text", *text}};
  if (const json::value* cc = o->if_contains("cache_control"); cc != nullptr && (cc->is_object() || cc->is_null()))
    block.emplace("cache_control", *cc);
  carry(block, foreign_members(*o, {"type", "text", "cache_control"}));
  return block;
}

Expected<json::array> blocks_of_parts(const json::array& parts, const std::string& where) {
  json::array out;
  out.reserve(parts.size());
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (!parts[k].is_object()) return Error{fmt::format("{}.content.{} must be an object, got {}", where, k, kind_of(parts[k]))};
    out.push_back(block_of_part(parts[k]));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Model form → Chat form, for what a stage edited or built.

Expected<json::value> part_of_block(const json::value& block) {
  const json::object& o = block.get_object();
  std::string_view type = o.at("type").get_string();
  if (type == kCarriedType) return o.at("value");
  if (type != "text") return Error{fmt::format("a {} block has no Chat Completions form", type)};
  json::object part{{"type", "text"}, {"text", o.at("text")}};
  if (const json::value* cc = o.if_contains("cache_control")) part.emplace("cache_control", *cc);
  if (const json::value* c = o.if_contains(kCarriedMember); c != nullptr && c->is_object())
    for (const auto& kv : c->get_object()) part.emplace(kv.key(), kv.value());
  return json::value(std::move(part));
}

// A content (a string, or blocks) in the Chat form: a string stays one.
Expected<json::value> chat_content(const json::value& content) {
  if (!content.is_array()) return content;
  json::array parts;
  for (const auto& b : content.get_array()) {
    auto part = part_of_block(b);
    if (!part) return part.error();
    parts.push_back(std::move(*part));
  }
  return json::value(std::move(parts));
}

void merge_carried(json::object& into, const json::object& block) {
  if (const json::value* c = block.if_contains(kCarriedMember); c != nullptr && c->is_object())
    for (const auto& kv : c->get_object()) into.emplace(kv.key(), kv.value());
}

class ChatRequest final : public WireRequest {
 public:
  const Conversation& conversation() const override { return *conversation_; }
  Expected<std::string> write(const Conversation& compacted) const override;

  std::shared_ptr<const std::string> body;
  bool bare = false;  // the input was a messages array, not a request body: written back as one
  ArraySpans spans;
  std::size_t head = 0;                   // the leading system/developer messages: the frame's system
  std::vector<Origin> origins;            // per model message
  std::vector<std::size_t> entry_items;   // per system entry, the wire item it is
  std::unordered_map<std::string, std::pair<std::size_t, std::size_t>> results;  // call id → (model message, block)
  std::unordered_map<std::string, std::size_t> result_items;                     // call id → its tool message
  std::unordered_map<std::string_view, std::vector<std::size_t>> by_raw;         // model message bytes → indices
  std::optional<Conversation> conversation_;

 private:
  Expected<bool> write_converted(const Message& m, const std::function<void(std::string_view)>& add) const;
};

Expected<bool> ChatRequest::write_converted(const Message& m, const std::function<void(std::string_view)>& add) const {
  const json::value* content = m.json().if_contains("content");
  if (m.role() == Role::assistant) {
    json::object out{{"role", "assistant"}};
    std::string text;
    json::array calls;
    for (const Block& b : m.blocks()) {
      if (is_carried(b) && b.string_field("of") == "fields") {
        if (const json::value* v = b.field("value"); v != nullptr && v->is_object())
          for (const auto& kv : v->get_object()) out.emplace(kv.key(), kv.value());
      } else if (b.kind() == BlockKind::text) {
        text += (text.empty() ? "" : "\n") + std::string(b.text());
      } else if (b.kind() == BlockKind::tool_use) {
        json::object function{{"name", b.name()}};
        const json::value* carried = b.field(kCarriedMember);
        const json::value* arguments = carried != nullptr && carried->is_object() ? carried->get_object().if_contains("arguments") : nullptr;
        function.emplace("arguments", arguments != nullptr ? *arguments : json::value(json::serialize(b.input() ? *b.input() : json::value(json::object{}))));
        json::object call{{"id", b.id()}, {"type", "function"}, {"function", std::move(function)}};
        if (carried != nullptr && carried->is_object())
          for (const auto& kv : carried->get_object())
            if (kv.key() != "arguments") call.emplace(kv.key(), kv.value());
        calls.push_back(std::move(call));
      } else {
        return Error{fmt::format("an assistant message's {} block has no Chat Completions form", b.type())};
      }
    }
    out.emplace("content", text.empty() && !calls.empty() ? json::value(nullptr) : json::value(text));
    if (!calls.empty()) out.emplace("tool_calls", std::move(calls));
    add(json::serialize(out));
    return true;
  }
  // A user message: its tool results are tool messages (an unchanged one the client's own, an
  // edited one the client's with only its content replaced); the rest one user message after them.
  if (content != nullptr && content->is_string()) {
    add(json::serialize(json::object{{"role", "user"}, {"content", *content}}));
    return true;
  }
  json::object user{{"role", "user"}};
  json::array parts;
  const json::array& blocks = content->get_array();
  for (std::size_t j = 0; j < blocks.size(); ++j) {
    const Block& b = m.blocks()[j];
    if (b.kind() != BlockKind::tool_result) {
      if (is_carried(b) && b.string_field("of") == "fields") {
        if (const json::value* v = b.field("value"); v != nullptr && v->is_object())
          for (const auto& kv : v->get_object()) user.emplace(kv.key(), kv.value());
        continue;
      }
      auto part = part_of_block(blocks[j]);
      if (!part) return part.error();
      parts.push_back(std::move(*part));
      continue;
    }
    const std::string id(b.tool_use_id());
    auto item = result_items.find(id);
    auto original = results.find(id);
    if (item != result_items.end() && original != results.end()) {
      const Block& before = conversation_->messages()[original->second.first]->blocks()[original->second.second];
      std::string_view bytes = spans.items[item->second];
      if (*before.json() == blocks[j].get_object()) {
        add(bytes);
        continue;
      }
      // Only the content changed (pairs_unchanged and carried_unchanged hold the rest).
      auto span = detail::find_value_span(bytes, {{"content"}});
      const json::value* now = b.content();
      auto replaced = chat_content(now != nullptr ? *now : json::value(""));
      if (span && replaced) {
        std::string out(bytes.substr(0, span->begin));
        out += json::serialize(*replaced);
        out += bytes.substr(span->end);
        add(out);
        continue;
      }
    }
    json::object tool{{"role", "tool"}, {"tool_call_id", id}};
    auto replaced = chat_content(b.content() != nullptr ? *b.content() : json::value(""));
    if (!replaced) return replaced.error();
    tool.emplace("content", std::move(*replaced));
    merge_carried(tool, blocks[j].get_object());
    add(json::serialize(tool));
  }
  if (!parts.empty()) {
    user.emplace("content", std::move(parts));
    add(json::serialize(user));
  }
  return true;
}

Expected<std::string> ChatRequest::write(const Conversation& compacted) const {
  std::string_view text = *body;
  std::string out(text.substr(0, spans.open + 1));
  bool first = true;
  auto add = [&](std::string_view bytes) {
    if (!first) out += ',';
    out += bytes;
    first = false;
  };
  for (std::size_t k = 0; k < head; ++k) add(spans.items[k]);
  const std::vector<std::size_t>& slots = compacted.system_slots();
  std::size_t entry = 0, next = 0;
  for (std::size_t i = 0; i <= compacted.size(); ++i) {
    for (; entry < slots.size() && slots[entry] != Conversation::kUnplaced && slots[entry] <= i; ++entry)
      add(spans.items[entry_items[entry]]);
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
      for (std::size_t k = origins[index].first; k < origins[index].last; ++k) add(spans.items[k]);
      next = index + 1;
      continue;
    }
    auto written = write_converted(m, add);
    if (!written) return Error{fmt::format("messages.{}: {}", i, written.error().message)};
  }
  for (; entry < slots.size(); ++entry) add(spans.items[entry_items[entry]]);  // unplaced: never lost
  out += text.substr(spans.close);
  if (bare) return out.substr(kBareOpen.size(), out.size() - kBareOpen.size() - 1);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Chat form → model form.

class Reader {
 public:
  Reader(ChatRequest& r, const std::string& source) : r_(r), source_(source) {}

  Expected<bool> read(const json::array& list);

 private:
  std::string where(std::size_t i) const { return fmt::format("{}: messages.{}", source_, i); }
  Expected<bool> user(const json::object& o, std::size_t i);
  Expected<bool> assistant(const json::object& o, std::size_t i);
  Expected<bool> tool(const json::object& o, std::size_t i);
  Expected<bool> add(json::object message, Origin origin, std::size_t i);
  Expected<bool> flush_results();

  ChatRequest& r_;
  const std::string& source_;
  std::vector<MessagePtr> messages_;
  json::array results_;  // tool messages waiting to be one user message
  Origin results_origin_;
 public:
  std::vector<MessagePtr>& messages() { return messages_; }
  std::vector<std::size_t> entry_slots;
};

Expected<bool> Reader::add(json::object message, Origin origin, std::size_t i) {
  auto m = Message::from_json(std::move(message));
  if (!m) return Error{fmt::format("{}: {}", where(i), m.error().message)};
  r_.origins.push_back(origin);
  messages_.push_back(std::move(*m));
  return true;
}

Expected<bool> Reader::flush_results() {
  if (results_.empty()) return true;
  const std::size_t model = messages_.size();
  for (std::size_t j = 0; j < results_.size(); ++j)
    r_.results[std::string(results_[j].at("tool_use_id").get_string())] = {model, j};
  auto added = add(json::object{{"role", "user"}, {"content", std::move(results_)}}, results_origin_, results_origin_.first);
  results_ = json::array();
  return added;
}

Expected<bool> Reader::user(const json::object& o, std::size_t i) {
  const json::value* content = o.if_contains("content");
  json::object fields = foreign_members(o, {"role", "content"});
  json::object message{{"role", "user"}};
  if (content != nullptr && content->is_string() && fields.empty()) {
    message.emplace("content", *content);
    return add(std::move(message), {i, i + 1}, i);
  }
  json::array blocks;
  if (!fields.empty()) blocks.push_back(carried_block("fields", std::move(fields)));
  if (content == nullptr || content->is_null()) return Error{where(i) + ".content: a user message needs content"};
  if (content->is_string()) {
    blocks.push_back(json::object{{"type", "text"}, {"text", *content}});
  } else if (content->is_array()) {
    auto parts = blocks_of_parts(content->get_array(), where(i));
    if (!parts) return parts.error();
    for (auto& p : *parts) blocks.push_back(std::move(p));
  } else {
    return Error{where(i) + ".content must be a string or an array of parts, got " + kind_of(*content)};
  }
  message.emplace("content", std::move(blocks));
  return add(std::move(message), {i, i + 1}, i);
}

Expected<bool> Reader::assistant(const json::object& o, std::size_t i) {
  json::array blocks;
  json::object fields = foreign_members(o, {"role", "content", "tool_calls"});
  if (!fields.empty()) {
    bool reasoning = false;
    for (const auto& kv : fields) reasoning |= kv.key().starts_with("reasoning") || kv.key() == "thinking";
    blocks.push_back(carried_block("fields", std::move(fields), reasoning));
  }
  if (const json::value* content = o.if_contains("content"); content != nullptr && !content->is_null()) {
    if (content->is_string()) {
      if (!content->get_string().empty()) blocks.push_back(json::object{{"type", "text"}, {"text", *content}});
    } else if (content->is_array()) {
      auto parts = blocks_of_parts(content->get_array(), where(i));
      if (!parts) return parts.error();
      for (auto& p : *parts) blocks.push_back(std::move(p));
    } else {
      return Error{where(i) + ".content must be a string, an array of parts or null, got " + kind_of(*content)};
    }
  }
  if (const json::value* calls = o.if_contains("tool_calls"); calls != nullptr && !calls->is_null()) {
    if (!calls->is_array()) return Error{where(i) + ".tool_calls must be an array, got " + kind_of(*calls)};
    const json::array& list = calls->get_array();
    for (std::size_t k = 0; k < list.size(); ++k) {
      const std::string at = fmt::format("{}.tool_calls.{}", where(i), k);
      const json::object* call = list[k].if_object();
      if (call == nullptr) return Error{at + " must be an object, got " + kind_of(list[k])};
      const json::value* id = call->if_contains("id");
      if (id == nullptr || !id->is_string() || id->get_string().empty()) return Error{at + ".id must be a non-empty string"};
      json::object carried = foreign_members(*call, {"id", "function"});
      if (const json::value* type = carried.if_contains("type"); type != nullptr && *type == "function") carried.erase("type");
      std::string name;
      json::value input = json::object{};
      if (const json::value* function = call->if_contains("function"); function != nullptr && function->is_object()) {
        const json::object& f = function->get_object();
        if (const json::value* n = f.if_contains("name"); n != nullptr && n->is_string()) name = std::string(n->get_string());
        for (const auto& kv : foreign_members(f, {"name", "arguments"})) carried.emplace(kv.key(), kv.value());
        // The arguments are the model's JSON text, read as the tool's input when it holds an
        // object; some histories hold the object itself, which is the input as it is. Anything
        // else is carried as it came (the API takes any string).
        const json::value* arguments = f.if_contains("arguments");
        boost::system::error_code ec;
        json::value parsed = arguments != nullptr && arguments->is_string() ? detail::parse_json(arguments->get_string(), ec) : json::value();
        if (arguments != nullptr && arguments->is_object()) input = *arguments;
        else if (arguments != nullptr && arguments->is_string() && !ec && parsed.is_object()) input = std::move(parsed);
        else if (arguments != nullptr) carried.emplace("arguments", *arguments);
      } else if (function != nullptr) {
        carried.emplace("function", *function);
      }
      json::object use{{"type", "tool_use"}, {"id", *id}, {"name", name}, {"input", std::move(input)}};
      carry(use, std::move(carried));
      blocks.push_back(std::move(use));
    }
  }
  return add(json::object{{"role", "assistant"}, {"content", std::move(blocks)}}, {i, i + 1}, i);
}

Expected<bool> Reader::tool(const json::object& o, std::size_t i) {
  const json::value* id = o.if_contains("tool_call_id");
  if (id == nullptr || !id->is_string() || id->get_string().empty())
    return Error{where(i) + ".tool_call_id must be a non-empty string (rule: a tool message answers a tool call)"};
  json::object result{{"type", "tool_result"}, {"tool_use_id", *id}};
  const json::value* content = o.if_contains("content");
  if (content == nullptr || content->is_null()) return Error{where(i) + ".content: a tool message needs content"};
  if (content->is_string()) {
    result.emplace("content", *content);
  } else if (content->is_array()) {
    auto parts = blocks_of_parts(content->get_array(), where(i));
    if (!parts) return parts.error();
    result.emplace("content", std::move(*parts));
  } else {
    return Error{where(i) + ".content must be a string or an array of parts, got " + kind_of(*content)};
  }
  carry(result, foreign_members(o, {"role", "tool_call_id", "content"}));
  if (results_.empty()) results_origin_ = {i, i};
  results_origin_.last = i + 1;
  r_.result_items[std::string(id->get_string())] = i;
  results_.push_back(std::move(result));
  return true;
}

Expected<bool> Reader::read(const json::array& list) {
  bool in_head = true;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json::object* o = list[i].if_object();
    if (o == nullptr) return Error{where(i) + " must be an object, got " + kind_of(list[i])};
    const json::value* role = o->if_contains("role");
    if (role == nullptr || !role->is_string()) return Error{where(i) + ".role must be a string"};
    std::string_view r = role->get_string();
    if (r != "tool") {
      if (auto flushed = flush_results(); !flushed) return flushed;
    }
    if (r == "system" || r == "developer") {
      if (in_head) {
        r_.head = i + 1;
        continue;
      }
      // A system message later in the history stays where it is, like the Messages API's
      // system entries (the host keeps them; no stage sees one).
      r_.entry_items.push_back(i);
      entry_slots.push_back(messages_.size());
      continue;
    }
    in_head = false;
    Expected<bool> read = true;
    if (r == "user") read = user(*o, i);
    else if (r == "assistant") read = assistant(*o, i);
    else if (r == "tool") read = tool(*o, i);
    else return Error{fmt::format("{}: role \"{}\" is not one the API takes (system, developer, user, assistant, tool)", where(i), r)};
    if (!read) return read;
  }
  return flush_results();
}

// The text blocks of a system message's content, for entries written joined.
std::string entry_blocks(const json::object& o) {
  const json::value* content = o.if_contains("content");
  if (content == nullptr) return "";
  if (content->is_string()) return json::serialize(json::object{{"type", "text"}, {"text", *content}});
  std::string out;
  if (content->is_array())
    for (const auto& part : content->get_array()) {
      if (!out.empty()) out += ',';
      out += json::serialize(part);
    }
  return out;
}

class OpenAiChat final : public WireFormat {
 public:
  std::string_view name() const override { return "openai_chat"; }
  std::string_view route() const override { return "chat_completions"; }
  std::string_view title() const override { return "OpenAI Chat Completions"; }
  std::string_view endpoint() const override { return "POST /v1/chat/completions"; }
  std::string_view upstream_key() const override { return "openai"; }
  std::string_view default_upstream() const override { return "https://api.openai.com"; }

  bool handles(std::string_view method, std::string_view path) const override {
    return method == "POST" && path == "/v1/chat/completions";
  }

  Expected<std::unique_ptr<WireRequest>> read(std::string body, const std::string& source) const override {
    auto request = std::make_unique<ChatRequest>();
    const std::size_t start = body.find_first_not_of(" \t\r\n");
    request->bare = start != std::string::npos && body[start] == '[';
    if (request->bare) body = std::string(kBareOpen) + body + "}";
    request->body = std::make_shared<const std::string>(std::move(body));
    const std::string_view text = *request->body;
    boost::system::error_code ec;
    json::value doc = detail::parse_json(text, ec);
    const json::object* o = !ec ? doc.if_object() : nullptr;
    const json::value* list = o != nullptr ? o->if_contains("messages") : nullptr;
    auto spans = list != nullptr && list->is_array() ? array_member_spans(text, "messages") : std::nullopt;
    if (!spans || spans->items.size() != list->get_array().size())
      return Error{source + ": not an OpenAI chat request (an object with a messages array) nor a messages array"};
    if (request->bare && !is_whole_bare_array(*spans, text, kBareOpen.size()))
      return Error{fmt::format("{}: offset {}: more after the {}, which must be the whole input", source,
                               spans->close + 1 - kBareOpen.size(), "messages array")};
    request->spans = std::move(*spans);
    Reader reader(*request, source);
    if (auto read = reader.read(list->get_array()); !read) return read.error();
    if (reader.messages().empty()) return Error{"no messages to compact"};

    // The frame: the head's system messages and the tools count in the budget, as sent.
    auto frame = std::make_shared<ConversationFrame>();
    frame->format = InputFormat::request_body;
    FrameLayout frame_layout;  // a bare array's, over the client's body
    frame_layout.buffer = request->body;
    auto fixed = [&](std::string_view json_text) {
      frame->fixed += Sizes{count_code_points(json_text), json_text.size()};
      frame_layout.fixed_json.push_back(json_text);
    };
    for (std::size_t k = 0; k < request->head; ++k) fixed(request->spans.items[k]);
    if (auto tools = detail::find_value_span(text, {{"tools"}})) fixed(text.substr(tools->begin, tools->end - tools->begin));
    for (std::size_t k = 0; k < request->entry_items.size(); ++k) {
      std::string_view raw = request->spans.items[request->entry_items[k]];
      frame->system_entries.push_back(SystemEntry{raw, reader.entry_slots[k], entry_blocks(list->get_array()[request->entry_items[k]].get_object())});
      fixed(raw);
    }
    frame_layout.original = reader.messages();
    ConversationHost::set_layout(*frame, std::move(frame_layout));
    Conversation conversation = ConversationHost::make(frame, reader.messages());
    for (std::size_t k = 0; k < conversation.system_slots().size(); ++k)
      if (conversation.system_slots()[k] == Conversation::kUnplaced)
        return Error{fmt::format("{}: messages.{}: a system message where compactor cannot keep it in place (it keeps one "
                                 "only after a user turn, before an assistant turn, and not next to another)",
                                 source, request->entry_items[k])};
    for (std::size_t i = 0; i < conversation.size(); ++i) request->by_raw[conversation[i].raw()].push_back(i);
    request->conversation_.emplace(std::move(conversation));
    return std::unique_ptr<WireRequest>(std::move(request));
  }

  // What Chat Completions refuses in a history: a tool message that does not answer a tool call
  // of the assistant message right before it (pairing, read on the model form, where those tool
  // messages are one message), a call without its result, ids used twice. And what Compactor
  // carries stays as it came.
  std::vector<CheckerPtr> rules() const override {
    std::vector<CheckerPtr> rules;
    rules.push_back(detail::make_pairing_checker());
    rules.push_back(make_unique_call_ids_checker());
    rules.push_back(make_carried_unchanged_checker());
    return rules;
  }

  // `context_length_exceeded` (HTTP 400, invalid_request_error).
  bool context_refusal(int status, std::string_view body) const override {
    if (status != 400 && status != 413) return false;
    return body.find("context_length_exceeded") != std::string_view::npos;
  }

  ErrorReply error_reply(ProxyError kind, std::string_view message) const override {
    return openai_error_reply(kind, message, false);
  }

  bool openai_tokenizer() const override { return true; }
  std::vector<const InputForm*> input_forms() const override { return {&openai_form()}; }
};

}  // namespace

ErrorReply openai_error_reply(ProxyError kind, std::string_view message, bool with_param) {
  auto reply = [&](int status, std::string_view type, std::string_view code) {
    json::object error{{"message", message}, {"type", type}};
    if (with_param) error["param"] = nullptr;
    error["code"] = code.empty() ? json::value(nullptr) : json::value(code);
    return ErrorReply{status, json::serialize(json::object{{"error", std::move(error)}})};
  };
  switch (kind) {
    case ProxyError::overloaded: return reply(503, "server_error", "");
    case ProxyError::body_too_large: return reply(413, "invalid_request_error", "request_too_large");
    case ProxyError::upstream_failed: return reply(502, "server_error", "");
    case ProxyError::pipeline_failed: return reply(500, "server_error", "");
    case ProxyError::bad_request: return reply(400, "invalid_request_error", "");
    case ProxyError::unauthorized: return reply(401, "invalid_request_error", "invalid_api_key");
    case ProxyError::websocket_refused: return reply(426, "invalid_request_error", "websocket_not_supported");
  }
  return reply(500, "server_error", "");
}

const WireFormat& openai_chat() {
  static const OpenAiChat format;
  return format;
}

}  // namespace compactor::wire
