#include "wire/openai_chat.hpp"

#include "wire/array_spans.hpp"

#include "checkers/builtin_checkers.hpp"
#include "import/importers.hpp"
#include "model/conversation_reader.hpp"
#include "model/json_scanner.hpp"
#include "platform/counted.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

namespace compactor::wire {
namespace {

namespace json = boost::json;

std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

class ChatRequest final : public WireRequest {
 public:
  // `spans` point into `*body`.
  ChatRequest(std::shared_ptr<const std::string> body, ArraySpans spans, ImportResult imported, Conversation conversation)
      : body_(std::move(body)), spans_(std::move(spans)), imported_(std::move(imported)), conversation_(std::move(conversation)) {}

  const Conversation& conversation() const override { return conversation_; }
  Expected<std::string> write(const Conversation& compacted) const override;

 private:
  std::shared_ptr<const std::string> body_;
  ArraySpans spans_;
  ImportResult imported_;
  Conversation conversation_;
};

// The client's body around a new messages array, in which each message the pipeline left as it
// was goes out as the exact bytes of the client's own message(s) it was imported from (and the
// system messages before the first one); only what a stage built is exported.
Expected<std::string> ChatRequest::write(const Conversation& compacted) const {
  const std::vector<MessagePtr>& source = conversation_.messages();
  const std::vector<std::size_t>& lines = imported_.message_lines;
  const std::vector<std::string_view>& original = spans_.items;
  const Error unmapped{"pipeline output not mapped back to OpenAI messages"};
  if (lines.size() != source.size() || source.empty()) return unmapped;
  std::string_view body = *body_;
  std::string out(body.substr(0, spans_.open + 1));
  bool first = true;
  auto add = [&](std::string_view bytes) {
    if (!first) out += ',';
    out += bytes;
    first = false;
  };
  for (std::size_t k = 0; k < lines[0] && k < original.size(); ++k) add(original[k]);
  std::size_t next = 0;
  for (const MessagePtr& m : compacted.messages()) {
    std::size_t found = source.size();
    for (std::size_t i = next; i < source.size(); ++i)
      if (source[i]->raw() == m->raw()) {
        found = i;
        break;
      }
    if (found < source.size()) {
      std::size_t end = found + 1 < lines.size() ? lines[found + 1] : original.size();
      for (std::size_t k = lines[found]; k < end && k < original.size(); ++k) add(original[k]);
      next = found + 1;
      continue;
    }
    boost::system::error_code ec;
    json::value part = detail::parse_json(export_openai(Conversation::from_messages({m})), ec);
    if (ec || !part.is_array()) return unmapped;
    for (const auto& e : part.as_array()) add(json::serialize(e));
  }
  out += body.substr(spans_.close);
  return out;
}

class OpenAiChat final : public WireFormat {
 public:
  std::string_view name() const override { return "openai_chat"; }

  std::string_view route() const override { return "chat_completions"; }

  bool handles(std::string_view method, std::string_view path) const override {
    return method == "POST" && path == "/v1/chat/completions";
  }

  Expected<std::unique_ptr<WireRequest>> read(std::string body, const std::string& source) const override {
    auto owned = std::make_shared<const std::string>(std::move(body));
    boost::system::error_code ec;
    json::value doc = detail::parse_json(*owned, ec);
    std::optional<ArraySpans> spans;
    if (!ec && doc.is_object() && doc.as_object().contains("messages")) spans = array_member_spans(*owned, "messages");
    if (!spans) return Error{"not an OpenAI chat request with messages"};
    auto imported = import_openai(json::serialize(doc.as_object().at("messages")), source);
    if (!imported) return Error{first_line(imported.error().message)};
    // Never repaired silently: what the importer would have to change goes out as it came.
    const ImportReport& r = imported->report;
    if (!imported->conversation) return Error{"no messages to compact"};
    if (!r.repairs.empty())
      return Error{fmt::format("the history would need {} (first: {} at message {})", counted(r.repairs.size(), "repair", "repairs"),
                               r.repairs.front().kind, r.repairs.front().line)};
    if (r.fields_dropped > 0) return Error{fmt::format("{} the Anthropic form cannot carry", counted(r.fields_dropped, "field", "fields"))};
    // The imported conversation (its system lifted into `system`, which the budget counts).
    ReadOptions options;
    options.source = source;
    auto conversation = read_conversation(imported->conversation->serialize(), options);
    if (!conversation) return Error{first_line(conversation.error().message)};
    auto request = std::make_unique<ChatRequest>(std::move(owned), std::move(*spans), std::move(*imported), std::move(*conversation));
    return std::unique_ptr<WireRequest>(std::move(request));
  }

  std::vector<CheckerPtr> rules() const override { return make_input_checkers(); }

  // `context_length_exceeded` (HTTP 400, invalid_request_error).
  bool context_refusal(int status, std::string_view body) const override {
    if (status != 400 && status != 413) return false;
    return body.find("context_length_exceeded") != std::string_view::npos;
  }

  ErrorReply error_reply(ProxyError kind, std::string_view message) const override {
    auto reply = [&](int status, std::string_view type, std::string_view code) {
      json::object error{{"message", message}, {"type", type}};
      error["code"] = code.empty() ? json::value(nullptr) : json::value(code);
      return ErrorReply{status, json::serialize(json::object{{"error", std::move(error)}})};
    };
    switch (kind) {
      case ProxyError::overloaded: return reply(503, "server_error", "");
      case ProxyError::body_too_large: return reply(413, "invalid_request_error", "request_too_large");
      case ProxyError::upstream_failed: return reply(502, "server_error", "");
      case ProxyError::pipeline_failed: return reply(500, "server_error", "");
    }
    return reply(500, "server_error", "");
  }
};

}  // namespace

const WireFormat& openai_chat() {
  static const OpenAiChat format;
  return format;
}

}  // namespace compactor::wire
