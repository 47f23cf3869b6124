#include "serve/mcp_endpoint.hpp"

#include "model/json_scanner.hpp"
#include "store/store.hpp"

#include <boost/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace compactor::serve {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

// The sessions kept at most; past it one is forgotten to make room (its client then gets 404
// and starts a new session, as the transport says).
constexpr std::size_t kMaxSessions = 1024;

std::string random_session_id() {
  unsigned char bytes[16] = {};
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)!::read(fd, bytes, sizeof bytes);
    ::close(fd);
  }
  std::string out;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    out += hex;
  }
  return out;
}

std::string_view header(const http::request<http::string_body>& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
}

void rpc_error(ClientConnection& client, int status, int code, const std::string& message, const Headers& extra = {}) {
  respond(client, status,
          json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", json::object{{"code", code}, {"message", message}}}}),
          "application/json", extra);
}

// Constant-time comparison: the token is a secret.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

}  // namespace

bool is_loopback_host(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

McpEndpoint::McpEndpoint(std::string archive_dir, StoreConfig store, std::string version, std::string listen, bool loopback,
                         std::optional<std::string> token)
    : archive_dir_(std::move(archive_dir)), store_(std::move(store)), version_(std::move(version)), listen_(std::move(listen)),
      loopback_(loopback), token_(std::move(token)) {}

std::shared_ptr<const mcp::ArchiveServer> McpEndpoint::archive_for(const std::string& tenant) {
  constexpr std::size_t kKept = 16;
  std::lock_guard lock(archives_mutex_);
  for (auto it = archives_.begin(); it != archives_.end(); ++it)
    if (it->first == tenant) {
      archives_.splice(archives_.begin(), archives_, it);
      return archives_.front().second;
    }
  const bool folder = store_.kind == StoreConfig::Kind::folder;
  auto tools = std::make_unique<mcp::ArchiveTools>(store::open_store(store_, archive_dir_, tenant),
                                                   folder ? store::tenant_folder(archive_dir_, tenant) : std::string());
  archives_.emplace_front(tenant, std::make_shared<const mcp::ArchiveServer>(std::move(tools), version_));
  if (archives_.size() > kKept) archives_.pop_back();
  return archives_.front().second;
}

bool McpEndpoint::origin_allowed(std::string_view origin) const {
  if (origin.empty()) return true;  // not a browser
  std::string_view rest = origin;
  for (std::string_view scheme : {"http://", "https://"})
    if (rest.rfind(scheme, 0) == 0) rest.remove_prefix(scheme.size());
  if (rest == listen_) return true;  // this server's own origin
  std::string_view host = rest.substr(0, rest.rfind(':') == std::string_view::npos || rest.front() == '[' ? rest.size() : rest.rfind(':'));
  if (!rest.empty() && rest.front() == '[') host = rest.substr(0, rest.find(']') + 1);
  return is_loopback_host(host);
}

void McpEndpoint::handle(ClientConnection& client, const http::request<http::string_body>& req, const std::string& tenant) {
  if (!loopback_) {
    if (!token_) {
      rpc_error(client, 403, -32001,
                "compactor serve: /mcp is closed: the server listens beyond loopback and serve.mcp_token_env names no token");
      return;
    }
    std::string_view auth = header(req, "authorization");
    if (!auth.starts_with("Bearer ") || !same_secret(auth.substr(7), *token_)) {
      rpc_error(client, 401, -32001, "compactor serve: /mcp needs Authorization: Bearer <the token of serve.mcp_token_env>",
                {{"www-authenticate", "Bearer"}});
      return;
    }
  }
  if (!origin_allowed(header(req, "origin"))) {
    rpc_error(client, 403, -32001, "compactor serve: /mcp refuses requests from the origin " + std::string(header(req, "origin")));
    return;
  }
  const std::string_view version = header(req, "mcp-protocol-version");
  if (!version.empty() && std::find(mcp::kProtocolVersions.begin(), mcp::kProtocolVersions.end(), version) == mcp::kProtocolVersions.end()) {
    rpc_error(client, 400, -32600, "unsupported MCP-Protocol-Version " + std::string(version));
    return;
  }
  const std::string id(header(req, "mcp-session-id"));
  if (req.method() == http::verb::delete_) {
    std::lock_guard lock(sessions_mutex_);
    auto it = sessions_.find(id);
    const bool ours = it != sessions_.end() && it->second.tenant == tenant;
    if (ours) sessions_.erase(it);
    respond(client, ours ? 200 : 404, "", "application/json");
    return;
  }
  if (req.method() != http::verb::post) {
    respond(client, 405, "", "application/json", {{"allow", "POST, DELETE"}});
    return;
  }
  if (req.body().size() > mcp::McpServer::kMaxMessageBytes) {
    respond(client, 413, mcp::McpServer::too_large(), "application/json");
    return;
  }
  // The session this message belongs to: a known one, a new one for `initialize`, or none
  // (served at the header's version).
  boost::system::error_code ec;
  const json::value message = detail::parse_json(req.body(), ec);
  const json::value* method = !ec && message.is_object() ? message.get_object().if_contains("method") : nullptr;
  const bool initialize = method != nullptr && *method == "initialize";
  mcp::McpSession session;
  std::string session_id;
  if (!id.empty()) {
    std::lock_guard lock(sessions_mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.tenant != tenant) {
      rpc_error(client, 404, -32001, "no MCP session " + id + " (it ended, or this server restarted): initialize again");
      return;
    }
    session = it->second.session;
    session_id = id;
  } else if (initialize) {
    session_id = random_session_id();
  } else {
    session = mcp::McpSession::assumed(version.empty() ? "2025-03-26" : std::string(version));
  }
  std::optional<std::string> answer = archive_for(tenant)->server().handle(req.body(), session);
  Headers extra;
  if (!session_id.empty()) {
    std::lock_guard lock(sessions_mutex_);
    if (sessions_.size() >= kMaxSessions && sessions_.count(session_id) == 0) sessions_.erase(sessions_.begin());
    if (!initialize || session.protocol_version) sessions_[session_id] = TenantSession{tenant, session};
    if (initialize && session.protocol_version) extra.emplace_back("mcp-session-id", session_id);
  }
  if (!answer) {
    respond(client, 202, "", "application/json", extra);
    return;
  }
  respond(client, 200, *answer, "application/json", extra);
}

}  // namespace compactor::serve
