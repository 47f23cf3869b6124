#include "wire/anthropic/anthropic_messages.hpp"

#include "wire/anthropic/claude_code_log.hpp"
#include "wire/anthropic/messages_rules.hpp"
#include "wire/context_management.hpp"

#include "model/conversation_reader.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace compactor::wire {
namespace {

namespace json = boost::json;

class AnthropicRequest final : public WireRequest {
 public:
  explicit AnthropicRequest(Conversation conversation) : conversation_(std::move(conversation)) {}
  const Conversation& conversation() const override { return conversation_; }
  Expected<std::string> write(const Conversation& compacted) const override { return compacted.serialize(); }
  bool writes_model_form() const override { return true; }

 private:
  Conversation conversation_;
};

// Whether the first 64 KiB hold a Messages API tool block, which no other API's request has: the
// history is the Messages API's, and no other API's markers are searched for through the whole
// input (three scans of a 13 MB history were 4% of its run).
bool shows_messages_api_blocks(std::string_view bytes, std::string_view) {
  const std::string_view head = bytes.substr(0, 1 << 16);
  for (std::string_view marker : {"\"type\":\"tool_use\"", "\"type\": \"tool_use\"", "\"type\":\"tool_result\"", "\"type\": \"tool_result\""})
    if (head.find(marker) != std::string_view::npos) return true;
  return false;
}

// An OpenAI chat without tool calls looks like Anthropic messages but starts with its system
// message: detection keeps the error (in Anthropic messages it is a mistake), and says what to
// give if the file is such a chat.
Error with_chat_hint(Error error, const InputSource& source) {
  if (!source.detected || error.message.find("(rule: never first)") == std::string::npos) return error;
  return Error{error.message + "\n" + source.shown +
               ": an OpenAI chat history starts with its system message; if this is one, give --input-format openai"};
}

// A Messages API request body, messages array or JSONL: what every input is read as when
// detection finds no other form.
class MessagesRequestForm final : public InputForm {
 public:
  std::string_view name() const override { return "anthropic"; }
  std::string_view description() const override { return "an Anthropic Messages request body, messages array or JSONL"; }
  std::vector<Detection> detections() const override { return {{300, false, &shows_messages_api_blocks}}; }

  Expected<InputDocument> read(std::string bytes, const InputSource& source) const override {
    auto doc = request_document(anthropic_messages(), std::move(bytes), source.shown);
    if (!doc) return with_chat_hint(doc.error(), source);
    return doc;
  }

  bool imports_sessions() const override { return true; }
  Expected<ImportedSession> import_session(std::string bytes, const InputSource& source) const override {
    ReadOptions options;
    options.source = source.shown;
    auto c = read_conversation(std::move(bytes), options);
    if (!c) return with_chat_hint(c.error(), source);
    ImportedSession s;
    s.format = s.api = &anthropic_messages();
    s.result.report.source = source.shown;
    s.result.report.format = std::string(name());
    s.result.report.messages = c->size();
    for (const MessagePtr& m : c->messages())
      for (const Block& b : m->blocks()) s.result.report.tool_uses += b.kind() == BlockKind::tool_use;
    s.result.conversation = std::move(c).value();
    return s;
  }
};

class AnthropicMessages final : public WireFormat {
 public:
  std::string_view name() const override { return "anthropic_messages"; }

  std::string_view route() const override { return "messages"; }
  std::string_view title() const override { return "Anthropic Messages"; }
  std::string_view endpoint() const override { return "POST /v1/messages"; }

  std::string_view upstream_key() const override { return "anthropic"; }
  std::string_view default_upstream() const override { return "https://api.anthropic.com"; }

  bool handles(std::string_view method, std::string_view path) const override {
    return method == "POST" && path == "/v1/messages";
  }

  // The API's other endpoints under /v1/messages: count_tokens, batches.
  bool owns(std::string_view, std::string_view path) const override { return path.starts_with("/v1/messages/"); }

  Expected<std::unique_ptr<WireRequest>> read(std::string body, const std::string& source) const override {
    ReadOptions options;
    options.source = source;
    auto conversation = read_conversation(std::move(body), options);
    if (!conversation) return conversation.error();
    return std::unique_ptr<WireRequest>(std::make_unique<AnthropicRequest>(std::move(*conversation)));
  }

  // What the Messages API refuses in a history: structure (system entries' places), pairing, ids
  // and their pattern, at most 4 cache breakpoints.
  std::vector<CheckerPtr> rules() const override {
    std::vector<CheckerPtr> rules;
    rules.push_back(detail::make_structure_checker());
    rules.push_back(detail::make_pairing_checker());
    rules.push_back(detail::make_unique_ids_checker());
    rules.push_back(detail::make_cache_control_checker());
    return rules;
  }

  // "prompt is too long: 210000 tokens > 200000 maximum" (invalid_request_error, HTTP 400 or 413).
  bool context_refusal(int status, std::string_view body) const override {
    if (status != 400 && status != 413) return false;
    return body.find("prompt is too long") != std::string_view::npos ||
           body.find("prompt_too_long") != std::string_view::npos;
  }

  ErrorReply error_reply(ProxyError kind, std::string_view message) const override {
    auto reply = [&](int status, std::string_view type) {
      return ErrorReply{status, json::serialize(json::object{{"type", "error"},
                                                             {"error", json::object{{"type", type}, {"message", message}}}})};
    };
    switch (kind) {
      case ProxyError::overloaded: return reply(529, "overloaded_error");
      case ProxyError::body_too_large: return reply(413, "request_too_large");
      case ProxyError::upstream_failed: return reply(502, "api_error");
      case ProxyError::pipeline_failed: return reply(500, "api_error");
      case ProxyError::bad_request: return reply(400, "invalid_request_error");
      case ProxyError::unauthorized: return reply(401, "authentication_error");
      case ProxyError::websocket_refused: return reply(426, "invalid_request_error");
    }
    return reply(500, "api_error");
  }

  // {"edits": [{"type": "compact_20260112", …}, …]}: a compaction or a clearing of tool results
  // the API does itself.
  std::string native_context(std::string_view body) const override {
    auto asked = context_management_of(body);
    const json::object* o = asked ? asked->if_object() : nullptr;
    const json::value* edits = o != nullptr ? o->if_contains("edits") : nullptr;
    return edits != nullptr && edits->is_array() ? deferral_for(edits->get_array()) : "";
  }

  std::vector<const InputForm*> input_forms() const override {
    static const MessagesRequestForm request;
    return {&request, &claude_code_form()};
  }
};

}  // namespace

const WireFormat& anthropic_messages() {
  static const AnthropicMessages format;
  return format;
}

}  // namespace compactor::wire
