#include "mcp/mcp_server.hpp"

#include <algorithm>
#include <exception>

namespace compactor::mcp {
namespace json = boost::json;

ToolResult ToolResult::text(std::string text) {
  ToolResult r;
  r.content.push_back(json::object{{"type", "text"}, {"text", std::move(text)}});
  return r;
}

ToolResult ToolResult::error(std::string text) {
  ToolResult r = ToolResult::text(std::move(text));
  r.is_error = true;
  return r;
}

namespace {

RpcError invalid_params(std::string what) { return RpcError{RpcErrorCode::invalid_params, "Invalid params: " + what, nullptr}; }

}  // namespace

McpServer::McpServer(ServerInfo info, std::vector<Tool> tools) : info_(std::move(info)), tools_(std::move(tools)) {
  json::array list;
  for (const Tool& t : tools_)
    list.push_back(json::object{
        {"name", t.name},
        {"title", t.title},
        {"description", t.description},
        {"inputSchema", t.input_schema},
        {"annotations", json::object{{"readOnlyHint", t.read_only}, {"destructiveHint", false}, {"idempotentHint", true},
                                     {"openWorldHint", false}}},
    });
  tool_list_ = json::object{{"tools", std::move(list)}};
}

std::string McpServer::too_large() {
  return rpc_error(nullptr, RpcError{RpcErrorCode::invalid_request,
                                     "Invalid Request: a message is at most " + std::to_string(kMaxMessageBytes) + " bytes",
                                     nullptr});
}

std::optional<std::string> McpServer::handle(std::string_view message, McpSession& session) const {
  json::value id;  // the request's, once read: a failure after that still names it
  try {
    if (message.size() > kMaxMessageBytes) return too_large();
    RpcMessage m = read_rpc_message(message);
    id = m.id;
    switch (m.kind) {
      case RpcMessage::Kind::response: return std::nullopt;  // this server sends no request to be answered
      case RpcMessage::Kind::invalid: return rpc_error(m.id, m.error);
      case RpcMessage::Kind::notification:
        // Notifications are never answered; cancellation has nothing to stop (calls are answered
        // in turn, and quickly), and the others carry nothing this server uses.
        if (m.method == "notifications/initialized" && session.protocol_version) session.client_ready = true;
        return std::nullopt;
      case RpcMessage::Kind::request: break;
    }
    std::optional<RpcError> error;
    json::value result = dispatch(m, session, error);
    if (error) return rpc_error(m.id, *error);
    return rpc_result(m.id, std::move(result));
  } catch (const std::exception& e) {
    // Out of memory, mostly: the client hears of it and the server goes on.
    return rpc_error(id, RpcError{RpcErrorCode::internal_error, std::string("Internal error: ") + e.what(), nullptr});
  }
}

json::value McpServer::dispatch(const RpcMessage& request, McpSession& session, std::optional<RpcError>& error) const {
  const std::string& method = request.method;
  if (method == "ping") return json::object{};  // allowed before initialization too
  if (method == "initialize") return initialize(request.params, session, error);
  if (method != "tools/list" && method != "tools/call") {
    error = RpcError{RpcErrorCode::method_not_found, "Method not found: " + method, nullptr};
    return nullptr;
  }
  // Served once initialize is answered, even before the initialized notification: a client
  // SHOULD send that first, and one whose request overtakes it loses nothing by being answered.
  if (!session.protocol_version) {
    error = RpcError{RpcErrorCode::invalid_request, "Invalid Request: " + method + " before initialize", nullptr};
    return nullptr;
  }
  if (method == "tools/list") {
    // One page holds every tool: no cursor this server gave can exist.
    if (request.params.contains("cursor")) {
      error = invalid_params("unknown cursor (tools/list has one page)");
      return nullptr;
    }
    return tool_list_;
  }
  return call_tool(request.params, error);
}

json::value McpServer::initialize(const json::object& params, McpSession& session, std::optional<RpcError>& error) const {
  if (session.protocol_version) {
    error = RpcError{RpcErrorCode::invalid_request, "Invalid Request: the session is already initialized", nullptr};
    return nullptr;
  }
  const json::value* requested = params.if_contains("protocolVersion");
  if (requested == nullptr || !requested->is_string()) {
    error = invalid_params("initialize needs protocolVersion, a string");
    return nullptr;
  }
  for (const char* key : {"capabilities", "clientInfo"})
    if (const json::value* v = params.if_contains(key); v != nullptr && !v->is_object()) {
      error = invalid_params(std::string("initialize's ") + key + " must be an object");
      return nullptr;
    }
  // The client's version when this server speaks it, else the newest this server speaks (the
  // client then decides whether it can use it).
  std::string_view asked = requested->get_string();
  auto spoken = std::find(kProtocolVersions.begin(), kProtocolVersions.end(), asked);
  session.protocol_version = std::string(spoken != kProtocolVersions.end() ? *spoken : kProtocolVersions.front());
  session.client_ready = false;
  json::object result{
      {"protocolVersion", *session.protocol_version},
      {"capabilities", json::object{{"tools", json::object{{"listChanged", false}}}}},
      {"serverInfo", json::object{{"name", info_.name}, {"title", info_.title}, {"version", info_.version}}},
  };
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return result;
}

json::value McpServer::call_tool(const json::object& params, std::optional<RpcError>& error) const {
  const json::value* name = params.if_contains("name");
  if (name == nullptr || !name->is_string()) {
    error = invalid_params("tools/call needs name, a string");
    return nullptr;
  }
  auto tool = std::find_if(tools_.begin(), tools_.end(), [&](const Tool& t) { return t.name == name->get_string(); });
  if (tool == tools_.end()) {
    error = RpcError{RpcErrorCode::invalid_params, "Unknown tool: " + std::string(name->get_string()), nullptr};
    return nullptr;
  }
  static const json::object kNoArguments;
  const json::value* arguments = params.if_contains("arguments");
  if (arguments != nullptr && !arguments->is_object()) {
    error = invalid_params("tools/call's arguments must be an object");
    return nullptr;
  }
  ToolResult r = tool->call(arguments != nullptr ? arguments->get_object() : kNoArguments);
  return json::object{{"content", std::move(r.content)}, {"isError", r.is_error}};
}

}  // namespace compactor::mcp
