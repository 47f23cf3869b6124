#include "host/serve_config.hpp"

#include "host/listen_address.hpp"
#include "host/yaml_reader.hpp"

#include <boost/asio/ip/address.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <map>
#include <set>

namespace compactor {
namespace {

using detail::YamlReader;

const std::vector<std::string> kServeKeys = {
    "listen",          "upstreams",         "clients",         "max_body_bytes",    "workers",
    "max_queued",      "queue_timeout_ms",  "request_timeout_ms", "header_timeout_ms", "body_timeout_ms",
    "upstream_stall_ms", "io_threads",      "max_connections", "ca_file",           "on_failure",
    "mcp_token_env",   "metrics_token_env", "fronted",        "tenant_max_bytes", "unverified_max_bytes",
    "unverified_ttl_s",
    // Read for configs written before serve.upstreams and the pipeline queue, with a warning.
    "upstream",        "openai_upstream",   "gemini_upstream", "max_concurrency"};

bool is_url(const std::string& v) { return v.rfind("http://", 0) == 0 || v.rfind("https://", 0) == 0; }

// The host of an http(s) URL, without user info or port, brackets kept.
std::string host_of(const std::string& url) {
  std::size_t start = url.find("://");
  if (start == std::string::npos) return {};
  std::string authority = url.substr(start + 3, url.find_first_of("/?#", start + 3) - start - 3);
  if (std::size_t at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  return parse_authority(authority).host;
}

bool loopback_host(const std::string& host) {
  if (is_loopback_host(host)) return true;
  boost::system::error_code ec;
  auto a = boost::asio::ip::make_address(host.starts_with('[') ? host.substr(1, host.size() - 2) : host, ec);
  return !ec && a.is_loopback();
}

bool is_hex64(const std::string& v) {
  return v.size() == 64 && v.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Why `n` cannot name a client, or nothing.
std::string client_name_problem(const std::string& n) {
  if (n.empty() || n.size() > 64 || !((n[0] >= 'a' && n[0] <= 'z') || (n[0] >= '0' && n[0] <= '9')) ||
      n.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos)
    return "expected a name of a-z, 0-9, _ and - (at most 64, starting with a letter or digit), got \"" + n + "\"";
  // key-… names the tenant of an API key: a client so named would share that key's namespace.
  if (n.starts_with("key-")) return "\"" + n + "\" starts with key-, which names the tenants of API keys; choose another name";
  return {};
}

class ServeReader {
 public:
  ServeReader(YamlReader& r, const YAML::Node& serve, const std::string& base, ServeConfig& out, std::vector<std::string>& warnings)
      : r_(r), serve_(serve), base_(base), s_(out), warnings_(warnings) {}

  void read() {
    read_listen();
    read_upstreams();
    read_clients();
    read_limits();
    read_other();
    warn_about_exposure();
  }

 private:
  void warning(const YAML::Node& at, const std::string& path, const std::string& what) {
    warnings_.push_back(r_.location(at).to_string() + ": " + path + ": " + what);
  }
  std::optional<YAML::Node> member(const std::string& key) { return r_.member(serve_, "serve", key, false); }

  void read_listen() {
    if (auto l = member("listen"))
      if (auto v = r_.string(*l, "serve.listen")) {
        if (auto parsed = parse_listen_address(*v); !parsed) r_.error(*l, "serve.listen", parsed.error().message);
        else s_.listen = *v;
        listen_node_ = *l;
      }
  }

  // `key`: where the entry is named (an unknown API is reported there); `at`: its URL.
  void add_upstream(const YAML::Node& key, const YAML::Node& at, const std::string& path, const std::string& api, const std::string& url) {
    if (!is_url(url)) {
      r_.error(at, path, "expected an http:// or https:// URL, got \"" + url + "\"");
      return;
    }
    for (auto& e : s_.upstreams)
      if (e.api == api) {
        e = UpstreamEntry{api, url, r_.location(key)};
        return;
      }
    s_.upstreams.push_back(UpstreamEntry{api, url, r_.location(key)});
    if (url.rfind("http://", 0) == 0 && !loopback_host(host_of(url)))
      warning(at, path, "\"" + url + "\" is plain http to another machine: the client's API key crosses the network in clear");
  }

  void read_upstreams() {
    // The keys of before serve.upstreams, each an API's URL.
    const std::pair<const char*, const char*> old_keys[] = {{"upstream", "anthropic"}, {"openai_upstream", "openai"}, {"gemini_upstream", "gemini"}};
    for (const auto& [key, api] : old_keys)
      if (auto u = member(key))
        if (auto v = r_.string(*u, std::string("serve.") + key)) {
          warning(*u, std::string("serve.") + key, fmt::format("replaced by serve.upstreams: {{{}: URL}}; read as that", api));
          add_upstream(*u, *u, std::string("serve.") + key, api, *v);
        }
    auto map = member("upstreams");
    if (!map) return;
    if (!map->IsMap()) {
      r_.error(*map, "serve.upstreams", "expected a mapping of API to URL (anthropic: https://…), got " + YamlReader::describe(*map));
      return;
    }
    for (const auto& kv : *map) {
      const std::string api = kv.first.as<std::string>();
      const std::string path = "serve.upstreams." + api;
      if (auto v = r_.string(kv.second, path)) add_upstream(kv.first, kv.second, path, api, *v);
    }
  }

  void read_clients() {
    auto list = member("clients");
    if (!list) return;
    if (!list->IsSequence()) {
      r_.error(*list, "serve.clients", "expected a list of {name, token_sha256}, got " + YamlReader::describe(*list));
      return;
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      const YAML::Node c = (*list)[i];
      const std::string path = fmt::format("serve.clients[{}]", i);
      if (!r_.check_mapping(c, path, {"name", "token_sha256"})) continue;
      auto name = r_.member(c, path, "name", true);
      auto digest = r_.member(c, path, "token_sha256", true);
      std::optional<std::string> n = name ? r_.string(*name, path + ".name") : std::nullopt;
      std::optional<std::string> d = digest ? r_.string(*digest, path + ".token_sha256") : std::nullopt;
      if (n) {
        const std::string why = client_name_problem(*n);
        if (!why.empty()) {
          r_.error(*name, path + ".name", why);
          n.reset();
        }
      }
      if (d && !is_hex64(*d)) {
        // What was given is not shown: it may be the token itself, and this line reaches serve's log.
        r_.error(*digest, path + ".token_sha256",
                 fmt::format("expected 64 lowercase hex digits (the SHA-256 of the token; `compactor serve-token` prints it), got {} "
                             "characters, not shown{}",
                             d->size(), d->starts_with("cpt_") ? ": this is a token itself, which never goes in a config (issue a new one)" : ""));
        d.reset();
      }
      // A name may come twice (two tokens of one client while it rotates them); a token may not.
      for (std::size_t k = 0; k < s_.clients.size(); ++k)
        if (d && s_.clients[k].token_sha256 == *d) {
          r_.error(*digest, path + ".token_sha256",
                   fmt::format("the same token as serve.clients[{}] ({}): each token is one client's", client_index_[k], s_.clients[k].name));
          d.reset();
        }
      if (n && d) client_index_.push_back(i);
      if (n && d) s_.clients.push_back({*n, *d});
    }
  }

  void integer(const char* key, std::int64_t min, std::int64_t max, std::int64_t& out) {
    if (auto node = member(key))
      if (auto n = r_.integer(*node, std::string("serve.") + key, min, max)) out = *n;
  }

  void read_limits() {
    integer("max_body_bytes", 1024, std::int64_t{1} << 31, s_.max_body_bytes);
    integer("workers", 1, 1024, s_.workers);
    integer("max_queued", 1, 1000000, s_.max_queued);
    integer("queue_timeout_ms", 1, 86400000, s_.queue_timeout_ms);
    integer("request_timeout_ms", 1, 86400000, s_.request_timeout_ms);
    integer("header_timeout_ms", 100, 3600000, s_.header_timeout_ms);
    integer("body_timeout_ms", 100, 3600000, s_.body_timeout_ms);
    integer("upstream_stall_ms", 1000, 86400000, s_.upstream_stall_ms);
    integer("io_threads", 1, 64, s_.io_threads);
    integer("max_connections", 1, 10000000, s_.max_connections);
    integer("tenant_max_bytes", 1024, std::int64_t{1} << 50, s_.tenant_max_bytes);
    integer("unverified_max_bytes", 0, std::int64_t{1} << 40, s_.unverified_max_bytes);
    integer("unverified_ttl_s", 60, 30 * 86400, s_.unverified_ttl_s);
    if (auto c = member("max_concurrency")) {
      r_.integer(*c, "serve.max_concurrency", 1, 1000000);
      warning(*c, "serve.max_concurrency",
              "no longer limits anything: open streams cost no thread; pipelines are limited by serve.workers and serve.max_queued");
    }
  }

  // `key` names an environment variable (the secret itself never goes in a config).
  void variable_name(const char* key, std::string& out) {
    if (auto t = member(key))
      if (auto v = r_.string(*t, std::string("serve.") + key)) {
        if (v->empty() || v->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
          r_.error(*t, std::string("serve.") + key, "expected the name of an environment variable, got \"" + *v + "\"");
        else
          out = *v;
      }
  }

  void read_other() {
    variable_name("mcp_token_env", s_.mcp_token_env);
    variable_name("metrics_token_env", s_.metrics_token_env);
    if (auto f = member("fronted"))
      if (auto v = r_.param(*f, "serve.fronted", ParamSpec::boolean("fronted", "", false))) s_.fronted = std::get<bool>(*v);
    if (auto f = member("on_failure"))
      if (auto v = r_.choice(*f, "serve.on_failure", {"forward", "reject"})) s_.reject_on_failure = *v == "reject";
    if (auto c = member("ca_file"))
      if (auto v = r_.string(*c, "serve.ca_file")) {
        std::filesystem::path p(*v);
        s_.ca_file = (p.is_absolute() ? p : std::filesystem::path(base_) / p).lexically_normal().string();
        std::error_code ec;
        if (!std::filesystem::is_regular_file(s_.ca_file, ec)) r_.error(*c, "serve.ca_file", "no such file: " + s_.ca_file);
      }
  }

  void warn_about_exposure() {
    // Behind a front every request comes from the proxy on loopback: only a credential tells a
    // developer from anyone who reaches the front.
    if (s_.fronted && s_.clients.empty() && s_.mcp_token_env.empty())
      if (auto f = member("fronted"))
        r_.error(*f, "serve.fronted",
                 "serve behind a front needs a credential and this config has none: add under serve: "
                 "`clients: [{name: NAME, token_sha256: \"…\"}]` (the line `compactor serve-token --name NAME` prints, one per "
                 "developer), or `mcp_token_env: COMPACTOR_MCP_TOKEN` with that variable set in serve's environment");
    if (!s_.clients.empty() && !s_.mcp_token_env.empty())
      if (auto t = member("mcp_token_env"))
        warning(*t, "serve.mcp_token_env", "unused while serve.clients names clients: /mcp takes each client's own token");
    auto parsed = parse_listen_address(s_.listen);
    if (!parsed || parsed->loopback() || !s_.clients.empty() || !listen_node_) return;
    warning(*listen_node_, "serve.listen",
            "\"" + s_.listen + "\" is beyond loopback and serve.clients names no client: anyone who reaches it can use it "
            "(tenants are then told apart only by the API key they send); issue tokens with `compactor serve-token`");
  }

  YamlReader& r_;
  const YAML::Node& serve_;
  const std::string& base_;
  ServeConfig& s_;
  std::vector<std::string>& warnings_;
  std::optional<YAML::Node> listen_node_;
  std::vector<std::size_t> client_index_;  // where each of s_.clients is in the list
};

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A node's meaning, as one string: mappings by sorted key, so style and order do not count.
std::string canonical(const YAML::Node& node) {
  if (node.IsScalar()) return "s" + std::to_string(node.Scalar().size()) + ":" + node.Scalar();
  if (node.IsSequence()) {
    std::string out = "[";
    for (const auto& item : node) out += canonical(item) + ",";
    return out + "]";
  }
  if (node.IsMap()) {
    std::map<std::string, std::string> members;
    for (const auto& kv : node) members[canonical(kv.first)] = canonical(kv.second);
    std::string out = "{";
    for (const auto& [k, v] : members) out += k + "=" + v + ",";
    return out + "}";
  }
  return "~";
}

std::map<std::string, YAML::Node> members_of(const YAML::Node& map) {
  std::map<std::string, YAML::Node> out;
  if (map.IsMap())
    for (const auto& kv : map) out[kv.first.Scalar()] = kv.second;
  return out;
}

void compare_members(const YAML::Node& a, const YAML::Node& b, const std::string& prefix, std::vector<std::string>& out) {
  auto x = members_of(a), y = members_of(b);
  std::set<std::string> keys;
  for (const auto& [k, v] : x) keys.insert(k);
  for (const auto& [k, v] : y) keys.insert(k);
  for (const std::string& k : keys) {
    const bool in_x = x.count(k) != 0, in_y = y.count(k) != 0;
    if (in_x && in_y && x[k].IsMap() && y[k].IsMap() && prefix.empty() && (k == "serve" || k == "store")) {
      compare_members(x[k], y[k], k + ".", out);
      continue;
    }
    if (in_x != in_y || canonical(x[k]) != canonical(y[k])) out.push_back(prefix + k);
  }
}

}  // namespace

std::vector<std::string> changed_settings(const std::string& before, const std::string& after) {
  try {
    const YAML::Node a = YAML::Load(before), b = YAML::Load(after);
    if (!a.IsMap() || !b.IsMap()) return {"the whole file"};
    std::vector<std::string> out;
    compare_members(a, b, "", out);
    return out;
  } catch (const YAML::Exception&) {
    return {"the whole file"};
  }
}

std::string ServeConfig::upstream_of(std::string_view api) const {
  for (const auto& e : upstreams)
    if (e.api == api) return e.url;
  return {};
}

void read_serve_config(YamlReader& r, const YAML::Node& serve, const std::string& base, ServeConfig& out,
                       std::vector<std::string>& warnings) {
  if (!r.check_mapping(serve, "serve", kServeKeys)) return;
  ServeReader(r, serve, base, out, warnings).read();
}

void print_serve_config(std::string& out, const ServeConfig& s) {
  out += "serve:\n  listen: " + quoted(s.listen) + "\n";
  if (!s.upstreams.empty()) {
    out += "  upstreams:\n";
    for (const auto& e : s.upstreams) out += "    " + e.api + ": " + quoted(e.url) + "\n";
  }
  if (!s.clients.empty()) {
    out += "  clients:\n";
    for (const auto& c : s.clients) out += "    - {name: " + quoted(c.name) + ", token_sha256: " + quoted(c.token_sha256) + "}\n";
  }
  out += fmt::format(
      "  max_body_bytes: {}\n  max_queued: {}\n  queue_timeout_ms: {}\n  request_timeout_ms: {}\n  header_timeout_ms: {}\n"
      "  body_timeout_ms: {}\n  upstream_stall_ms: {}\n",
      s.max_body_bytes, s.max_queued, s.queue_timeout_ms, s.request_timeout_ms, s.header_timeout_ms, s.body_timeout_ms,
      s.upstream_stall_ms);
  if (s.workers > 0) out += fmt::format("  workers: {}\n", s.workers);
  if (s.io_threads > 0) out += fmt::format("  io_threads: {}\n", s.io_threads);
  if (s.max_connections > 0) out += fmt::format("  max_connections: {}\n", s.max_connections);
  if (!s.ca_file.empty()) out += "  ca_file: " + quoted(s.ca_file) + "\n";
  if (!s.mcp_token_env.empty()) out += "  mcp_token_env: " + quoted(s.mcp_token_env) + "\n";
  if (!s.metrics_token_env.empty()) out += "  metrics_token_env: " + quoted(s.metrics_token_env) + "\n";
  if (s.fronted) out += "  fronted: true\n";
  out += fmt::format("  tenant_max_bytes: {}\n  unverified_max_bytes: {}\n  unverified_ttl_s: {}\n", s.tenant_max_bytes,
                     s.unverified_max_bytes, s.unverified_ttl_s);
  out += std::string("  on_failure: ") + (s.reject_on_failure ? "reject" : "forward") + "\n";
}

}  // namespace compactor
