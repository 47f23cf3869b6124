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

#include "archive/store_config.hpp"
#include "mcp/archive_server.hpp"

#include <boost/beast/http.hpp>

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace compactor::serve {

class McpEndpoint {
 public:
  // `archive_dir` absolute; `store` the config's store (the archive folder, or Redis); `listen`
  // the HOST:PORT served; `token` the bearer token, when the listen address is not loopback
  // (nullopt there: /mcp is closed).
  McpEndpoint(std::string archive_dir, StoreConfig store, std::string version, std::string listen, bool loopback,
              std::optional<std::string> token);

  // Serves one request on `tenant`'s archive (empty: the default namespace), which the caller
  // chose for the client it authenticated: the tools read that tenant's receipts and no other's,
  // and a session opened for one tenant is unknown (404) to a request for another.
  void handle(ClientConnection& client, const boost::beast::http::request<boost::beast::http::string_body>& req,
              const std::string& tenant = "");

 private:
  bool origin_allowed(std::string_view origin) const;
  // The archive's MCP server over `tenant`'s namespace, made at its first request; the few most
  // recently used are kept (each keeps a few blobs the model is paging through).
  std::shared_ptr<const mcp::ArchiveServer> archive_for(const std::string& tenant);

  std::string archive_dir_;
  StoreConfig store_;
  std::string version_;
  std::mutex archives_mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const mcp::ArchiveServer>>> archives_;  // most recent first
  std::string listen_;
  bool loopback_;
  std::optional<std::string> token_;
  std::mutex sessions_mutex_;
  struct TenantSession {
    std::string tenant;
    mcp::McpSession session;
  };
  std::map<std::string, TenantSession> sessions_;  // by Mcp-Session-Id
};

// True for 127.0.0.0/8, localhost and ::1.
bool is_loopback_host(std::string_view host);

}  // namespace compactor::serve
