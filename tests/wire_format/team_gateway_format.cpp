// TEST ONLY: a wire format added the way docs/serve.md ("Adding a wire format") says: this one file
// and one registration line (in wire_format_registration_test.cpp's main). It stands for a team's
// own gateway: Anthropic-shaped conversations on its own path (`POST /gateway/v1/chat`), its own
// upstream key (`gateway`, set with `serve.upstreams: {gateway: URL}`), its own other endpoints
// (`/gateway/v1/usage`), its own refusal text and its own error shape; and its own form of input
// (`team-gateway`: a body naming its `gateway_session`), which check, run, count, import and bench
// read with no change to them.
#include "team_gateway_format.hpp"

#include "model/conversation_reader.hpp"
#include "loader/builtin_checkers.hpp"

#include <boost/json.hpp>

namespace compactor::test {
namespace {

namespace json = boost::json;

const wire::WireFormat& gateway();

class GatewayRequest final : public wire::WireRequest {
 public:
  explicit GatewayRequest(Conversation c) : conversation_(std::move(c)) {}
  const Conversation& conversation() const override { return conversation_; }
  Expected<std::string> write(const Conversation& compacted) const override { return compacted.serialize(); }

 private:
  Conversation conversation_;
};

// A body that names the gateway's session: detected before any other form is asked.
bool names_a_gateway_session(std::string_view bytes, std::string_view) {
  return bytes.substr(0, 1 << 16).find("\"gateway_session\"") != std::string_view::npos;
}

class GatewayForm final : public wire::InputForm {
 public:
  std::string_view name() const override { return "team-gateway"; }
  std::string_view description() const override { return "a team gateway's request body (it names its gateway_session)"; }
  std::vector<wire::Detection> detections() const override { return {{50, true, &names_a_gateway_session}}; }

  Expected<wire::InputDocument> read(std::string bytes, const wire::InputSource& source) const override {
    return wire::request_document(gateway(), std::move(bytes), source.shown);
  }

  // A session is the request its last call sent, read by the adapter.
  bool imports_sessions() const override { return true; }
  Expected<wire::ImportedSession> import_session(std::string bytes, const wire::InputSource& source) const override {
    auto request = gateway().read(std::move(bytes), source.shown);
    if (!request) return request.error();
    wire::ImportedSession s{{}, &gateway(), &gateway(), false};
    const Conversation& c = (*request)->conversation();
    s.result.report.source = source.shown;
    s.result.report.format = std::string(name());
    s.result.report.messages = c.size();
    for (const MessagePtr& m : c.messages())
      for (const Block& b : m->blocks()) s.result.report.tool_uses += b.kind() == BlockKind::tool_use;
    s.result.conversation = c;
    return s;
  }
};

class TeamGateway final : public wire::WireFormat {
 public:
  std::string_view name() const override { return "team_gateway"; }
  std::string_view route() const override { return "gateway"; }
  std::string_view title() const override { return "Team gateway"; }
  std::string_view endpoint() const override { return "POST /gateway/v1/chat"; }
  std::string_view upstream_key() const override { return "gateway"; }
  std::string_view default_upstream() const override { return "http://127.0.0.1:9"; }

  bool handles(std::string_view method, std::string_view path) const override {
    return method == "POST" && path == "/gateway/v1/chat";
  }
  bool owns(std::string_view, std::string_view path) const override { return path.starts_with("/gateway/"); }

  Expected<std::unique_ptr<wire::WireRequest>> read(std::string body, const std::string& source) const override {
    ReadOptions options;
    options.source = source;
    auto conversation = read_conversation(std::move(body), options);
    if (!conversation) return conversation.error();
    return std::unique_ptr<wire::WireRequest>(std::make_unique<GatewayRequest>(std::move(*conversation)));
  }

  std::vector<CheckerPtr> rules() const override { return make_input_checkers(); }

  bool context_refusal(int status, std::string_view body) const override {
    return status == 400 && body.find("gateway: context too long") != std::string_view::npos;
  }

  wire::ErrorReply error_reply(wire::ProxyError kind, std::string_view message) const override {
    int status = 500;
    switch (kind) {
      case wire::ProxyError::overloaded: status = 503; break;
      case wire::ProxyError::body_too_large: status = 413; break;
      case wire::ProxyError::upstream_failed: status = 502; break;
      case wire::ProxyError::pipeline_failed: status = 500; break;
      case wire::ProxyError::bad_request: status = 400; break;
      case wire::ProxyError::unauthorized: status = 401; break;
      case wire::ProxyError::websocket_refused: status = 426; break;
    }
    return {status, json::serialize(json::object{{"gateway_error", json::object{{"status", status}, {"text", message}}}})};
  }

  std::vector<const wire::InputForm*> input_forms() const override {
    static const GatewayForm form;
    return {&form};
  }
};

const wire::WireFormat& gateway() {
  static const TeamGateway format;
  return format;
}

}  // namespace

const wire::WireFormat& team_gateway_format() { return gateway(); }

}  // namespace compactor::test
