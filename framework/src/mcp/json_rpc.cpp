#include "mcp/json_rpc.hpp"

namespace compactor::mcp {
namespace json = boost::json;

namespace {

RpcMessage invalid(RpcErrorCode code, std::string message, json::value id = nullptr) {
  RpcMessage m;
  m.kind = RpcMessage::Kind::invalid;
  m.id = std::move(id);
  m.error = RpcError{code, std::move(message), nullptr};
  return m;
}

// MCP's ids are strings or integers; a fractional or null id identifies nothing.
bool usable_id(const json::value& id) { return id.is_string() || id.is_int64() || id.is_uint64(); }

}  // namespace

RpcMessage read_rpc_message(std::string_view bytes) {
  json::parse_options options;
  options.max_depth = kMaxRpcDepth;
  boost::system::error_code ec;
  json::value root = json::parse(bytes, ec, {}, options);
  if (ec) return invalid(RpcErrorCode::parse_error, "Parse error: " + ec.message());
  if (root.is_array())
    return invalid(RpcErrorCode::invalid_request, "Invalid Request: batches are not supported (MCP removed them in 2025-06-18)");
  if (!root.is_object()) return invalid(RpcErrorCode::invalid_request, "Invalid Request: a message is a JSON object");
  json::object& o = root.get_object();

  // The id first, so that every later refusal of a request names it.
  const json::value* id = o.if_contains("id");
  json::value known_id = id != nullptr && usable_id(*id) ? *id : json::value(nullptr);
  const json::value* version = o.if_contains("jsonrpc");
  if (version == nullptr || !version->is_string() || version->get_string() != "2.0")
    return invalid(RpcErrorCode::invalid_request, "Invalid Request: \"jsonrpc\" must be \"2.0\"", known_id);
  if (id != nullptr && !usable_id(*id))
    return invalid(RpcErrorCode::invalid_request, "Invalid Request: \"id\" must be a string or an integer");

  const json::value* method = o.if_contains("method");
  if (method == nullptr) {
    // A response to a request this server never sends: nothing to answer.
    if (id != nullptr && (o.contains("result") || o.contains("error"))) {
      RpcMessage m;
      m.kind = RpcMessage::Kind::response;
      m.id = known_id;
      return m;
    }
    return invalid(RpcErrorCode::invalid_request, "Invalid Request: no \"method\"", known_id);
  }
  if (!method->is_string()) return invalid(RpcErrorCode::invalid_request, "Invalid Request: \"method\" must be a string", known_id);

  RpcMessage m;
  m.kind = id != nullptr ? RpcMessage::Kind::request : RpcMessage::Kind::notification;
  m.id = known_id;
  m.method = std::string(method->get_string());
  if (const json::value* params = o.if_contains("params")) {
    // JSON-RPC allows an array; every MCP method takes an object. A notification is never
    // answered, whatever its params.
    if (params->is_array()) {
      if (m.kind == RpcMessage::Kind::notification) return m;
      return invalid(RpcErrorCode::invalid_params, "Invalid params: \"params\" must be an object", known_id);
    }
    if (!params->is_object()) return invalid(RpcErrorCode::invalid_request, "Invalid Request: \"params\" must be an object", known_id);
    m.params = params->get_object();
  }
  return m;
}

std::string rpc_result(const json::value& id, json::value result) {
  return json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

std::string rpc_error(const json::value& id, const RpcError& error) {
  json::object e{{"code", static_cast<int>(error.code)}, {"message", error.message}};
  if (!error.data.is_null()) e["data"] = error.data;
  return json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(e)}});
}

}  // namespace compactor::mcp
