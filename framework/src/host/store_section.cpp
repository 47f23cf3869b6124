#include "host/store_section.hpp"

#include "host/pipeline_config.hpp"
#include "host/yaml_writer.hpp"
#include "model/conversation_reader.hpp"

#include <filesystem>

namespace compactor {
namespace detail {
namespace {

constexpr std::string_view kNoTls =
    "TLS needs hiredis 1.0 or later, and Debian 12 ships 0.14: reach Redis over a private network or through a TLS "
    "tunnel on loopback (stunnel, spiped; docs/store.md)";

// redis://HOST[:PORT][/DB] or unix:///PATH[?db=DB] into `out`; a problem, said as the rest of the
// config says them, otherwise. A password in the URL is refused: it would be logged and copied
// with the config; it comes from the variable password_env names.
std::optional<std::string> parse_redis_url(const std::string& url, StoreConfig& out) {
  const std::string expected = "expected redis://HOST:PORT/DB or unix:///PATH?db=DB, got \"" + url + "\"";
  auto number = [](std::string_view text, int max) -> std::optional<int> {
    if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
    int n = std::stoi(std::string(text));
    return n <= max ? std::optional<int>(n) : std::nullopt;
  };
  std::string_view rest = url;
  if (rest.starts_with("rediss://")) return std::string(kNoTls);
  if (rest.starts_with("unix://")) {
    rest.remove_prefix(7);
    std::size_t q = rest.find('?');
    out.socket = std::string(rest.substr(0, q));
    if (out.socket.empty() || out.socket.front() != '/') return expected;
    if (q != std::string_view::npos) {
      auto db = rest.substr(q + 1).starts_with("db=") ? number(rest.substr(q + 4), 15) : std::nullopt;
      if (!db) return expected;
      out.db = *db;
    }
    return std::nullopt;
  }
  if (!rest.starts_with("redis://")) return expected;
  rest.remove_prefix(8);
  std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos)
    return "a password or user in the URL would be logged and copied with the config: give store.username and "
           "store.password_env (the variable holding the password), got \"" + url + "\"";
  if (slash != std::string_view::npos) {
    auto db = number(rest.substr(slash + 1), 15);
    if (!db) return expected;
    out.db = *db;
  }
  std::size_t colon = authority.rfind(':');
  if (!authority.empty() && authority.front() == '[') {
    std::size_t close = authority.find("]:");
    colon = close == std::string_view::npos ? std::string_view::npos : close + 1;
    authority = authority.substr(1);
    if (colon != std::string_view::npos) --colon;
    out.host = std::string(authority.substr(0, colon == std::string_view::npos ? authority.find(']') : colon - 1));
  } else {
    out.host = std::string(authority.substr(0, colon));
  }
  if (colon != std::string_view::npos) {
    auto port = number(authority.substr(colon + 1), 65535);
    if (!port || *port == 0) return expected;
    out.port = *port;
  }
  if (out.host.empty()) return expected;
  return std::nullopt;
}

}  // namespace

void read_store_section(YamlReader& r, const YAML::Node& root, StoreConfig& config) {
  auto store = r.member(root, "", "store", false);
  if (!store || !r.check_mapping(*store, "store", {"kind", "url", "username", "password_env", "tls", "prefix", "timeout_ms", "state_ttl_s",
                                                   "superseded_ttl_s", "state_secret_file", "state_secret_env"}))
    return;
  StoreConfig s;
  if (auto k = r.member(*store, "store", "kind", true))
    if (auto v = r.choice(*k, "store.kind", {"folder", "redis"})) s.kind = *v == "redis" ? StoreConfig::Kind::redis : StoreConfig::Kind::folder;
  const bool redis = s.kind == StoreConfig::Kind::redis;
  auto redis_only = [&](const char* key) {
    auto node = r.member(*store, "store", key, false);
    if (node && !redis) {
      r.error(*node, std::string("store.") + key, "only a redis store has this key (kind is folder: archive.dir holds everything)");
      return std::optional<YAML::Node>();
    }
    return node;
  };
  s.url = redis ? "redis://127.0.0.1:6379/0" : "";
  if (auto u = redis_only("url"))
    if (auto v = r.string(*u, "store.url")) {
      s.url = *v;
      if (auto problem = parse_redis_url(*v, s)) r.error(*u, "store.url", *problem);
    }
  if (auto u = redis_only("username"))
    if (auto v = r.string(*u, "store.username")) s.username = *v;
  if (auto p = redis_only("password_env"))
    if (auto v = r.string(*p, "store.password_env")) {
      if (v->empty() || v->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
        r.error(*p, "store.password_env", "expected the name of an environment variable, got \"" + *v + "\"");
      else
        s.password_env = *v;
    }
  if (auto t = redis_only("tls"))
    if (auto v = r.param(*t, "store.tls", ParamSpec::boolean("tls", "", false)); v && std::get<bool>(*v)) r.error(*t, "store.tls", std::string(kNoTls));
  if (auto p = redis_only("prefix"))
    if (auto v = r.string(*p, "store.prefix")) {
      if (v->empty() || v->size() > 64 || v->find_first_of("{}: \t\r\n") != std::string::npos)
        r.error(*p, "store.prefix", "expected 1 to 64 characters without braces, colons or spaces, got \"" + *v + "\"");
      else
        s.prefix = *v;
    }
  if (auto t = redis_only("timeout_ms"))
    if (auto n = r.integer(*t, "store.timeout_ms", 1, 60000)) s.timeout_ms = *n;
  if (auto t = redis_only("state_ttl_s"))
    if (auto n = r.integer(*t, "store.state_ttl_s", 60, std::int64_t{10} * 365 * 24 * 3600)) s.state_ttl_s = *n;
  if (auto t = redis_only("superseded_ttl_s"))
    if (auto n = r.integer(*t, "store.superseded_ttl_s", 1, std::int64_t{10} * 365 * 24 * 3600)) s.superseded_ttl_s = *n;
  if (auto f = redis_only("state_secret_file"))
    if (auto v = r.string(*f, "store.state_secret_file")) {
      std::filesystem::path p(*v);
      s.state_secret_file = (p.is_absolute() ? p : std::filesystem::path(r.file()).parent_path() / p).lexically_normal().string();
    }
  if (auto e = redis_only("state_secret_env"))
    if (auto v = r.string(*e, "store.state_secret_env")) {
      if (v->empty() || v->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
        r.error(*e, "store.state_secret_env", "expected the name of an environment variable, got \"" + *v + "\"");
      else
        s.state_secret_env = *v;
    }
  config = s;
}

void print_store_section(std::string& out, const StoreConfig& store) {
  if (store.kind == StoreConfig::Kind::redis) {  // the folder store, the default, goes unsaid
    const StoreConfig& st = store;
    out += "store:\n  kind: redis\n  url: " + quoted(st.url) + "\n";
    if (!st.username.empty()) out += "  username: " + quoted(st.username) + "\n";
    if (!st.password_env.empty()) out += "  password_env: " + quoted(st.password_env) + "\n";
    if (!st.state_secret_file.empty()) out += "  state_secret_file: " + quoted(st.state_secret_file) + "\n";
    if (!st.state_secret_env.empty()) out += "  state_secret_env: " + quoted(st.state_secret_env) + "\n";
    out += "  prefix: " + quoted(st.prefix) + "\n  timeout_ms: " + std::to_string(st.timeout_ms) +
           "\n  state_ttl_s: " + std::to_string(st.state_ttl_s) + "\n  superseded_ttl_s: " + std::to_string(st.superseded_ttl_s) + "\n";
  }
}

}  // namespace detail

using detail::YamlReader;

Expected<StoreSettings> config_store_settings(const std::string& file) {
  auto dir = config_archive_dir(file);
  if (!dir) return dir.error();
  auto text = read_input_bytes(file);
  if (!text) return text.error();
  StoreSettings out{*dir, {}};
  YamlReader r(file);
  try {
    detail::read_store_section(r, YAML::Load(*text), out.store);
  } catch (const YAML::Exception& e) {
    return Error{file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg};
  }
  if (!r.errors().empty()) return Error{r.errors().front()};
  return out;
}

}  // namespace compactor
