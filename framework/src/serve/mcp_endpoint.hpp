// `/mcp`: the archive's MCP server (mcp/archive_server.hpp) over MCP's Streamable HTTP
// transport, on the archive folder this server writes, so an agent whose proxy runs elsewhere
// restores from the same archive (replicas sharing the folder serve each other's receipts).
//
// POST carries one JSON-RPC message and is answered with JSON (202 Accepted, no body, for a
// notification or a response); `initialize` opens a session named by the Mcp-Session-Id header
// of its answer, which later requests send back (an unknown one: 404, so the client starts
// again); a request without one is served statelessly at the version its MCP-Protocol-Version
// header names (2025-03-26 when absent, as the transport says). GET (no server-sent stream is
// offered) answers 405; DELETE ends a session. An Origin header must be a loopback origin or
// this server's own (403 otherwise: DNS rebinding). When the server listens on an address other
// than loopback, every request must carry `Authorization: Bearer <token>`, the token read from
// the environment variable serve.mcp_token_env names (never logged); without one configured,
// /mcp answers 403 and the server says so at start.
#pragma once

#include "serve/client_connection.hpp"

#include "mcp/archive_server.hpp"

#include <boost/beast/http.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace compactor::serve {

class McpEndpoint {
 public:
  // `archive_dir` absolute; `listen` the HOST:PORT served; `token` the bearer token, when the
  // listen address is not loopback (nullopt there: /mcp is closed).
  McpEndpoint(std::string archive_dir, std::string version, std::string listen, bool loopback,
              std::optional<std::string> token);

  void handle(ClientConnection& client, const boost::beast::http::request<boost::beast::http::string_body>& req);

 private:
  bool origin_allowed(std::string_view origin) const;

  mcp::ArchiveServer archive_;
  std::string listen_;
  bool loopback_;
  std::optional<std::string> token_;
  std::mutex sessions_mutex_;
  std::map<std::string, mcp::McpSession> sessions_;  // by Mcp-Session-Id
};

// True for 127.0.0.0/8, localhost and ::1.
bool is_loopback_host(std::string_view host);

}  // namespace compactor::serve
