#include "wire/anthropic/anthropic_messages.hpp"

#include "wire/anthropic/messages_rules.hpp"

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

 private:
  Conversation conversation_;
};

class AnthropicMessages final : public WireFormat {
 public:
  std::string_view name() const override { return "anthropic_messages"; }

  std::string_view route() const override { return "messages"; }

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
};

}  // namespace

const WireFormat& anthropic_messages() {
  static const AnthropicMessages format;
  return format;
}

}  // namespace compactor::wire
