// `/mcp`: the archive's MCP server (mcp/archive_server.hpp) over MCP's Streamable HTTP transport,
// serving each tenant (serve/tenant.hpp) its own archive only, so a developer restores what serve
// archived for them from any folder, whoever runs serve, and nobody else's.
//
// POST carries one JSON-RPC message and is answered with JSON (202 Accepted, no body, for a
// notification or a response); `initialize` opens a session named by the Mcp-Session-Id header
// of its answer (16 bytes from getrandom), which later requests send back (an unknown one, or
// one opened by another tenant: 404, so the client starts again); a request without one is
// served statelessly at the version its MCP-Protocol-Version header names (2025-03-26 when
// absent, as the transport says). GET (no server-sent stream is offered) answers 405; DELETE
// ends a session.
//
// Who may call it:
//  - A request that came through a proxy (Forwarded, X-Forwarded-For, X-Forwarded-Host, X-Real-IP
//    or Via; every request with serve.fronted) is remote: its Host says what the proxy was asked
//    for, not who asked, so it needs a credential (below), and without one /mcp is refused (403).
//  - On a loopback listener, another request's Host header must name this server on loopback exactly
//    (127.0.0.1, [::1] or localhost, with this port), and an Origin, when sent, a loopback host
//    exactly (any port: a local tool's page), else 403: a web page whose own name is made to
//    resolve to 127.0.0.1 (DNS rebinding) is refused, and so is "127.attacker.example".
//  - With serve.clients, a client's token is required and picks its tenant (x-compactor-token or
//    Bearer); otherwise serve.mcp_token_env, when set, is required on every listener
//    (`Authorization: Bearer`), and the tenant is the API key's. Beyond loopback with neither,
//    /mcp is closed (403).
#pragma once

#include "serve/http_session.hpp"
#include "serve/reply.hpp"
#include "serve/store_redaction.hpp"
#include "serve/tenant.hpp"

#include "archive/store_config.hpp"
#include "mcp/archive_server.hpp"

#include <atomic>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace compactor::serve {

struct McpAccess {
  std::string listen_host;  // as configured, brackets kept for IPv6
  unsigned port = 0;         // the port actually bound
  bool loopback = true;
  std::optional<std::string> token;  // serve.mcp_token_env's value
  std::vector<ServeClient> clients;
  bool fronted = false;  // serve.fronted: every request came through a proxy
};

class McpEndpoint {
 public:
  // `archive_dir` absolute: the archive folder serve writes; `store` the config's store (that
  // folder, or Redis), where each tenant's namespace is read.
  McpEndpoint(std::string archive_dir, StoreConfig store, std::string version, McpAccess access);

  // A message's size at most (a larger body is refused from its head, or as it arrives).
  static constexpr std::size_t kMaxBodyBytes = mcp::McpServer::kMaxMessageBytes;

  // From the head alone, before any of the body is read: a caller who may not call (403, 401),
  // or a body over kMaxBodyBytes by its Content-Length (413). Nothing else is decided here.
  std::optional<Reply> screen(const RequestHead& head, std::uint64_t content_length) const;

  // The answer to a body over kMaxBodyBytes that was refused as it arrived (chunked).
  static Reply too_large();

  // Thread-safe: requests are served on a small pool of their own (an archive read may block).
  // `tenant`, when given, is set to the caller's tenant once authenticated (for the log line).
  Reply handle(const Request& req, std::string* tenant = nullptr);

  // Why /mcp is closed (a line for the server to print at start), or nothing.
  std::optional<std::string> closed_reason() const;

  // A reload's endpoint shares the sessions of the one before (a client's session lives on; a
  // request is still authenticated anew, so a removed client's session is of no use to it). One
  // table, not a copy: a request the old endpoint still serves after the swap opens or updates
  // its session where the new one finds it.
  void adopt_sessions(const McpEndpoint& before);

  // The port the server bound (serve.listen may say 0: any free port), for the Host check.
  void bind_port(unsigned port) { port_ = port; }

 private:
  std::optional<Reply> refused(const RequestHead& head, std::string& tenant) const;
  // The archive's MCP server over `tenant`'s namespace, made at its first request; the few most
  // recently used are kept (each keeps a few blobs the model is paging through).
  std::shared_ptr<const mcp::ArchiveServer> archive_for(const std::string& tenant);

  // An error answer with the store's address hidden (a tool's error, an RPC error); any other as
  // it is (a restored blob's bytes are the client's own, never rewritten).
  std::string shown(std::string answer) const;

  std::string archive_dir_;
  StoreConfig store_;
  StoreRedaction redaction_;
  std::string version_;
  McpAccess access_;
  std::atomic<unsigned> port_;
  std::mutex mutex_;  // archives_
  std::list<std::pair<std::string, std::shared_ptr<const mcp::ArchiveServer>>> archives_;  // most recent first
  struct Session {
    std::string tenant;
    mcp::McpSession state;
  };
  struct Sessions {
    std::mutex mutex;
    std::map<std::string, Session> by_id;  // by Mcp-Session-Id
  };
  std::shared_ptr<Sessions> sessions_ = std::make_shared<Sessions>();
};

}  // namespace compactor::serve
