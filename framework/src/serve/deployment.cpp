#include "serve/deployment.hpp"

#include "serve/upstream_url.hpp"

#include "host/exit_code.hpp"

#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

namespace compactor::serve {
namespace {

// How long a zygote may take to load the config and its plugins.
constexpr std::chrono::milliseconds kLoadTimeout{120000};

std::string api_names() {
  std::string out;
  for (const auto& k : wire::upstream_keys()) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// Each API's upstream: the command line's, else the config's, else the provider's own.
bool resolve_upstreams(const ServeOptions& options, Deployment& d, std::vector<std::string>& errors) {
  const ServeConfig& s = d.settings.serve;
  const std::vector<std::string> keys = wire::upstream_keys();
  for (const auto& e : s.upstreams)
    if (std::find(keys.begin(), keys.end(), e.api) == keys.end())
      errors.push_back(fmt::format("{}: serve.upstreams.{}: no API is called \"{}\"; the APIs are {}", e.location.to_string(), e.api,
                                   e.api, api_names()));
  for (const auto& [api, url] : options.upstreams)
    if (std::find(keys.begin(), keys.end(), api) == keys.end())
      errors.push_back(fmt::format("--upstream {}=…: no API is called \"{}\"; the APIs are {}", api, api, api_names()));
  for (const wire::WireFormat* f : wire::wire_formats()) {
    const std::string key(f->upstream_key());
    if (d.upstreams.count(key) != 0) continue;
    auto given = options.upstreams.find(key);
    std::string url = given != options.upstreams.end() ? given->second : s.upstream_of(key);
    if (url.empty()) url = std::string(f->default_upstream());
    while (!url.empty() && url.back() == '/') url.pop_back();
    if (!is_upstream_base(url)) errors.push_back(fmt::format("the {} upstream \"{}\" is not an http:// or https:// URL with a host", key, url));
    d.upstreams.emplace(key, url);
  }
  return errors.empty();
}

std::optional<std::string> mcp_token(const ServeConfig& s) {
  if (s.mcp_token_env.empty()) return std::nullopt;
  const char* t = std::getenv(s.mcp_token_env.c_str());
  if (t == nullptr || *t == '\0') return std::nullopt;
  return std::string(t);
}

}  // namespace

const std::string& Deployment::upstream_for(const wire::WireFormat& format) const {
  return upstreams.find(format.upstream_key())->second;
}

std::size_t Deployment::workers() const {
  return settings.serve.workers > 0 ? static_cast<std::size_t>(settings.serve.workers)
                                    : std::max(1u, std::thread::hardware_concurrency());
}

LoadOutcome load_deployment(const ServeOptions& options) {
  LoadOutcome out;
  ServeSettingsLoadResult read = load_serve_settings(options.config_file);
  if (!read.settings) {
    out.errors = std::move(read.errors);
    out.exit_code = kExitBadInput;
    return out;
  }
  auto d = std::make_shared<Deployment>();
  d->settings = std::move(*read.settings);
  ServeConfig& serve = d->settings.serve;
  if (options.listen) serve.listen = *options.listen;
  auto listen = parse_listen_address(serve.listen);
  if (!listen) out.errors.push_back((options.listen ? "--listen: " : options.config_file + ": serve.listen: ") + listen.error().message);
  else d->listen = *listen;
  if (!resolve_upstreams(options, *d, out.errors) || !out.errors.empty()) {
    out.exit_code = kExitBadInput;
    return out;
  }
  // /mcp serves the archive this server writes: its folder as the server resolves it.
  std::error_code ec;
  const std::string archive = std::filesystem::absolute(d->settings.archive_dir, ec).lexically_normal().string();
  McpAccess access{d->listen.host, d->listen.port, d->listen.loopback(), mcp_token(serve), serve.clients, serve.fronted};
  if (access.listen_host.find(':') != std::string::npos) access.listen_host = "[" + access.listen_host + "]";
  d->mcp = std::make_shared<McpEndpoint>(archive, d->settings.store, options.version, std::move(access));
  d->redaction = StoreRedaction(d->settings.store, archive);
  Zygote::StartFailure failure;
  d->zygote = Zygote::start(options.config_file, kLoadTimeout, failure);
  if (!d->zygote) {
    out.errors = std::move(failure.errors);
    out.exit_code = failure.exit_code;
    return out;
  }
  out.deployment = std::move(d);
  return out;
}

}  // namespace compactor::serve
