#include "serve/mcp_endpoint.hpp"

#include "host/listen_address.hpp"

#include "model/json_scanner.hpp"
#include "store/store.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <sys/random.h>

#include <algorithm>
#include <filesystem>

namespace compactor::serve {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

// The sessions kept at most; past it one is forgotten to make room (its client then gets 404
// and starts a new session, as the transport says).
constexpr std::size_t kMaxSessions = 1024;

// 16 random bytes as hex, or nothing when the kernel gives none (never a guessable id).
std::optional<std::string> random_session_id() {
  unsigned char bytes[16];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) return std::nullopt;
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

std::string_view header(const http::fields& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
}

Reply rpc_error(int status, int code, const std::string& message, Headers extra = {}) {
  return Reply{status,
               json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", json::object{{"code", code}, {"message", message}}}}),
               "application/json", std::move(extra)};
}

// An authority that names this server on loopback: an exact loopback host and this port.
bool names_this_loopback_server(std::string_view authority, unsigned port) {
  Authority a = parse_authority(authority);
  return a.valid && is_loopback_host(a.host) && a.port == port;
}

bool is_loopback_origin(std::string_view authority) {
  Authority a = parse_authority(authority);
  return a.valid && is_loopback_host(a.host);
}

}  // namespace

McpEndpoint::McpEndpoint(std::string archive_dir, StoreConfig store, std::string version, McpAccess access)
    : archive_dir_(std::move(archive_dir)),
      store_(std::move(store)),
      redaction_(store_, archive_dir_),
      version_(std::move(version)),
      access_(std::move(access)),
      port_(access_.port) {}

std::optional<std::string> McpEndpoint::closed_reason() const {
  if (access_.loopback || access_.token || !access_.clients.empty()) return std::nullopt;
  return "/mcp is closed: the server listens beyond loopback and neither serve.mcp_token_env nor serve.clients gives a token";
}

// Whether the request may reach the archive, and for which tenant.
std::optional<Reply> McpEndpoint::refused(const RequestHead& req, std::string& tenant) const {
  if (auto why = closed_reason()) return rpc_error(403, -32001, "compactor serve: " + *why);
  // A proxy on this machine makes every caller look local (and may set any Host): what came
  // through one is remote, and only a credential admits it.
  const std::string_view proxy = access_.fronted ? std::string_view("serve.fronted") : proxy_header(req);
  if (!proxy.empty() && !access_.token && access_.clients.empty())
    return rpc_error(403, -32001, fmt::format("compactor serve: /mcp: this request came through a proxy ({}), and no Host header proves "
                                              "where it came from: add serve.clients (`compactor serve-token --name NAME` prints each "
                                              "line) or serve.mcp_token_env to serve /mcp there",
                                              proxy));
  if (access_.loopback && proxy.empty()) {
    if (!names_this_loopback_server(header(req, "host"), port_))
      return rpc_error(403, -32001, "compactor serve: /mcp answers only requests addressed to this server on loopback (Host)");
    std::string_view origin = header(req, "origin");
    for (std::string_view scheme : {"http://", "https://"})
      if (origin.starts_with(scheme)) origin.remove_prefix(scheme.size());
    // A page served on this machine (an MCP inspector on its own port) may call; one whose name
    // merely resolves here may not.
    if (!origin.empty() && !is_loopback_origin(origin))
      return rpc_error(403, -32001, "compactor serve: /mcp refuses requests from the origin " + std::string(header(req, "origin")));
  }
  RequestHead headers_only = req;
  // With client tokens, each client's token is its credential on /mcp as on the API routes; the
  // shared serve.mcp_token_env is for a server without clients (validate says it is unused).
  if (access_.token && access_.clients.empty()) {
    std::string_view auth = header(req, "authorization");
    if (!auth.starts_with("Bearer ") || !same_secret(auth.substr(7), *access_.token))
      return rpc_error(401, -32001, "compactor serve: /mcp needs Authorization: Bearer <the token of serve.mcp_token_env>",
                       {{"www-authenticate", "Bearer"}});
    headers_only.erase(http::field::authorization);  // the server's token, not an API key
  }
  auto who = identify_tenant(access_.clients, headers_only, req.target(), true);
  if (!who) return rpc_error(401, -32001, who.error().message, {{"www-authenticate", "Bearer"}});
  tenant = *who;
  return std::nullopt;
}

std::optional<Reply> McpEndpoint::screen(const RequestHead& head, std::uint64_t content_length) const {
  std::string tenant;
  if (auto refusal = refused(head, tenant)) return refusal;
  if (content_length > kMaxBodyBytes) return too_large();
  return std::nullopt;
}

Reply McpEndpoint::too_large() { return Reply{413, mcp::McpServer::too_large(), "application/json", {}}; }

std::shared_ptr<const mcp::ArchiveServer> McpEndpoint::archive_for(const std::string& tenant) {
  constexpr std::size_t kKept = 16;
  std::lock_guard lock(mutex_);
  for (auto it = archives_.begin(); it != archives_.end(); ++it)
    if (it->first == tenant) {
      archives_.splice(archives_.begin(), archives_, it);
      return archives_.front().second;
    }
  const bool folder = store_.kind == StoreConfig::Kind::folder;
  auto tools = std::make_unique<mcp::ArchiveTools>(store::open_store(store_, archive_dir_, tenant),
                                                   folder ? store::tenant_folder(archive_dir_, tenant) : std::string(),
                                                   archive_dir_);
  archives_.emplace_front(tenant, std::make_shared<const mcp::ArchiveServer>(std::move(tools), version_));
  if (archives_.size() > kKept) archives_.pop_back();
  return archives_.front().second;
}

std::string McpEndpoint::shown(std::string answer) const {
  // Cheap look first: most answers are no error, and a restored page may be large.
  if (answer.find("\"isError\":true") == std::string::npos && answer.find("\"error\":") == std::string::npos) return answer;
  boost::system::error_code ec;
  json::value v = detail::parse_json(answer, ec);
  json::object* o = ec ? nullptr : v.if_object();
  if (o == nullptr) return answer;
  auto redact = [this](json::value& text) {
    if (text.is_string()) text = json::string(redaction_(std::string(text.get_string())));
  };
  if (json::value* error = o->if_contains("error"); error != nullptr && error->is_object())
    if (json::value* message = error->get_object().if_contains("message")) redact(*message);
  json::value* result = o->if_contains("result");
  json::object* r = result != nullptr ? result->if_object() : nullptr;
  const json::value* failed = r != nullptr ? r->if_contains("isError") : nullptr;
  if (failed != nullptr && failed->is_bool() && failed->get_bool())
    if (json::value* content = r->if_contains("content"); content != nullptr && content->is_array())
      for (json::value& item : content->get_array())
        if (item.is_object())
          if (json::value* text = item.get_object().if_contains("text")) redact(*text);
  return json::serialize(v);
}

void McpEndpoint::adopt_sessions(const McpEndpoint& before) { sessions_ = before.sessions_; }

Reply McpEndpoint::handle(const Request& req, std::string* caller) {
  std::string tenant;
  if (auto refusal = refused(req.base(), tenant)) return *refusal;
  if (caller != nullptr) *caller = tenant_name(tenant);
  const std::string_view version = header(req, "mcp-protocol-version");
  if (!version.empty() && std::find(mcp::kProtocolVersions.begin(), mcp::kProtocolVersions.end(), version) == mcp::kProtocolVersions.end())
    return rpc_error(400, -32600, "unsupported MCP-Protocol-Version " + std::string(version));
  const std::string id(header(req, "mcp-session-id"));
  auto& sessions = sessions_->by_id;
  std::unique_lock lock(sessions_->mutex);
  auto known = sessions.find(id);
  // A session opened by another tenant is no session of this one.
  if (known != sessions.end() && known->second.tenant != tenant) known = sessions.end();
  if (req.method() == http::verb::delete_) {
    if (known == sessions.end()) return Reply{404, "", "application/json", {}};
    sessions.erase(known);
    return Reply{200, "", "application/json", {}};
  }
  if (req.method() != http::verb::post) return Reply{405, "", "application/json", {{"allow", "POST, DELETE"}}};
  if (req.body().size() > kMaxBodyBytes) return too_large();
  // The session this message belongs to: a known one, a new one for `initialize`, or none
  // (served at the header's version).
  boost::system::error_code ec;
  const json::value message = detail::parse_json(req.body(), ec);
  const json::value* method = !ec && message.is_object() ? message.get_object().if_contains("method") : nullptr;
  const bool initialize = method != nullptr && *method == "initialize";
  mcp::McpSession session;
  std::string session_id;
  if (!id.empty()) {
    if (known == sessions.end())
      return rpc_error(404, -32001, "no MCP session " + id + " for this client (it ended, this server restarted, or another "
                                    "client opened it): initialize again");
    session = known->second.state;
    session_id = id;
  } else if (initialize) {
    auto fresh = random_session_id();
    if (!fresh) return rpc_error(500, -32603, "compactor serve: no random bytes for a session id (getrandom failed)");
    session_id = *fresh;
  } else {
    session = mcp::McpSession::assumed(version.empty() ? "2025-03-26" : std::string(version));
  }
  lock.unlock();
  auto archive = archive_for(tenant);
  std::optional<std::string> answer = archive->server().handle(req.body(), session);
  Headers extra;
  if (!session_id.empty()) {
    lock.lock();
    if (sessions.size() >= kMaxSessions && sessions.count(session_id) == 0) sessions.erase(sessions.begin());
    if (!initialize || session.protocol_version) sessions[session_id] = Session{tenant, session};
    if (initialize && session.protocol_version) extra.emplace_back("mcp-session-id", session_id);
  }
  if (!answer) return Reply{202, "", "application/json", std::move(extra)};
  return Reply{200, shown(std::move(*answer)), "application/json", std::move(extra)};
}

}  // namespace compactor::serve
