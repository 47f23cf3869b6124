// The MCP server's protocol, apart from any transport: one JSON-RPC message in, the response out
// (or none, for a notification). The lifecycle (`initialize` with version negotiation, then
// `notifications/initialized`), `ping`, `tools/list` and `tools/call` of the MCP revisions from
// 2024-11-05 to 2025-11-25; every malformed message is answered as JSON-RPC says (-32700,
// -32600, -32601, -32602), never with an exception. The state of one client's session lives in
// an McpSession the transport keeps (one per stdio process, one per HTTP session), so one server
// can serve many sessions from many threads.
#pragma once

#include "mcp/json_rpc.hpp"
#include "mcp/tool.hpp"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::mcp {

// The revisions this server speaks, newest first. A client asking for another gets the newest.
inline constexpr std::array<std::string_view, 4> kProtocolVersions{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

struct McpSession {
  std::optional<std::string> protocol_version;  // set once `initialize` is answered
  bool client_ready = false;                    // `notifications/initialized` received

  // A session whose version the transport already knows (an HTTP request's
  // MCP-Protocol-Version header, for a server that keeps no session): operating at once.
  static McpSession assumed(std::string version) { return McpSession{std::move(version), true}; }
};

struct ServerInfo {
  std::string name;
  std::string title;
  std::string version;
  std::string instructions;  // for the model: what the server is for
};

class McpServer {
 public:
  McpServer(ServerInfo info, std::vector<Tool> tools);

  // A larger message is refused unread: every request this server takes is small.
  static constexpr std::size_t kMaxMessageBytes = std::size_t{1} << 20;

  // The response to one message, serialized on one line; nothing for a notification or a
  // response. Thread-safe as long as each session is used by one thread at a time.
  std::optional<std::string> handle(std::string_view message, McpSession& session) const;

  // The response that refuses a message that was never read whole (over kMaxMessageBytes).
  static std::string too_large();

 private:
  boost::json::value dispatch(const RpcMessage& request, McpSession& session, std::optional<RpcError>& error) const;
  boost::json::value initialize(const boost::json::object& params, McpSession& session, std::optional<RpcError>& error) const;
  boost::json::value call_tool(const boost::json::object& params, std::optional<RpcError>& error) const;

  ServerInfo info_;
  std::vector<Tool> tools_;
  boost::json::value tool_list_;  // tools/list's result, built once
};

}  // namespace compactor::mcp
