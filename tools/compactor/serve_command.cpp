// compactor serve --config F [--listen HOST:PORT] [--upstream [API=]URL]... [--openai-upstream URL] [--gemini-upstream URL]
#include "command_line.hpp"
#include "commands.hpp"
#include "serve/server.hpp"
#include "serve/tenant.hpp"
#include "serve/zygote_main.hpp"

#include "host/exit_code.hpp"
#include "host/listen_address.hpp"
#include "host/stderr_logger.hpp"

#include <fmt/core.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <sys/random.h>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"HELP(usage: compactor serve --config FILE [--listen HOST:PORT] [--upstream [API=]URL]...
                       [--openai-upstream URL] [--gemini-upstream URL]

An HTTP proxy in front of the model APIs. The conversation of each of these requests is compacted
by the config's pipeline (system and tools counted; what the conversation model has no place for
carried as it came), then forwarded with the client's headers; the upstream's answer comes back
unchanged, server-sent events as they arrive:
@ROUTES@
The APIs' other endpoints (count_tokens, /v1/responses/ID, Gemini's other methods) are passed
through to their upstream, and any other path to the @FIRST@ one. serve answers itself:
  GET  /healthz   ok (503 while draining), the config's hash and generation, the build
  GET  /metrics   Prometheus text: requests, sizes saved, stages, queue, tenants, connections
  GET  /dashboard a page for operators: per tenant savings, the config, recent compactions, the store
  POST /mcp       the archive's MCP server (restore, search) for the caller's tenant
Connections are asynchronous (an open stream holds no thread); pipelines run in worker
processes, at most serve.workers at once, the others queued (docs/serve.md).

options:
  --config FILE          the pipeline, with its `serve:` section (listen, upstreams, clients, limits)
  --listen HOST:PORT     overrides serve.listen (default 127.0.0.1:8088; [::1]:PORT for IPv6;
                         port 0: any free port)
@UPSTREAMS@  --openai-upstream URL  the same as --upstream openai=URL
  --gemini-upstream URL  the same as --upstream gemini=URL

The first line on stdout is "compactor serve: listening on http://HOST:PORT (upstream URL)".
SIGHUP, or a change to the config file, reloads it (validated in full; a bad one is refused and
the old one keeps serving). SIGTERM or SIGINT drains the requests in flight, then exits.

exit codes: 0 drained; 1 requests were still in flight at the time limit; 2 bad config, options
or listen address; 3 a plugin failed to load.
)HELP";

// The help with what the registered wire formats say: a line per API's conversation endpoint,
// the upstream other paths go to, and the --upstream options' APIs with their defaults.
std::string serve_help() {
  const auto& formats = wire::wire_formats();
  std::string routes;
  for (const wire::WireFormat* f : formats) {
    std::string line = fmt::format("  {:<39} {:<27} ", f->endpoint(), f->title());
    // An endpoint or a title too long for its column puts the upstream under the row.
    if (f->endpoint().size() > 39 || f->title().size() > 27) line = fmt::format("  {} {}\n{:70}", f->endpoint(), f->title(), "");
    routes += line + "upstream " + std::string(f->upstream_key()) + "\n";
  }
  const std::vector<std::string> keys = wire::upstream_keys();
  auto default_of = [&](const std::string& key) {
    for (const wire::WireFormat* f : formats)
      if (f->upstream_key() == key) return std::string(f->default_upstream());
    return std::string();
  };
  std::string apis;
  for (std::size_t i = 0; i < keys.size(); ++i)
    apis += (i == 0 ? "" : i + 1 == keys.size() ? " or " : ", ") + keys[i] + (i == 0 ? "" : " (default " + default_of(keys[i]) + ")");
  std::string upstreams = fmt::format("  --upstream URL         the {} upstream (default {})\n", keys.front(), default_of(keys.front()));
  // Words wrapped at 100 columns, under the description.
  std::string line = "  --upstream API=URL    ";
  const std::string said = "an API's upstream: " + apis + "; repeatable; overrides serve.upstreams";
  for (std::size_t at = 0; at < said.size();) {
    const std::size_t end = std::min(said.find(' ', at), said.size());
    if (line.size() + 1 + (end - at) > 100) {
      upstreams += line + "\n";
      line = std::string(24, ' ');
    }
    line += " " + said.substr(at, end - at);
    at = end + 1;
  }
  upstreams += line + "\n";
  std::string out = kHelp;
  for (auto [marker, text] : {std::pair<std::string_view, std::string>{"@ROUTES@\n", routes},
                              {"@FIRST@", keys.front()},
                              {"@UPSTREAMS@", upstreams}})
    if (std::size_t at = out.find(marker); at != std::string::npos) out.replace(at, marker.size(), text);
  return out;
}

}  // namespace

int serve_command(int argc, char** argv) {
  const Command command{"serve", serve_help()};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2, {{"config"}, {"listen"}, {"upstream", true, true}, {"openai-upstream"}, {"gemini-upstream"}}, exit_code);
  if (!args) return exit_code;
  if (!args->positional.empty()) return command.usage_error("unexpected argument " + args->positional.front());
  if (!args->get("config")) return command.usage_error("--config is required");
  serve::ServeOptions options;
  // --upstream URL (the first API's), --upstream API=URL, and the older per-API options.
  auto add_upstream = [&](std::string api, const std::string& url, const std::string& option) -> bool {
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
      command.usage_error(fmt::format("--{} expects an http:// or https:// URL, got \"{}\"", option, url));
      return false;
    }
    options.upstreams[std::move(api)] = url;
    return true;
  };
  const auto given = args->options.find("upstream");
  for (const std::string& u : given != args->options.end() ? given->second : std::vector<std::string>{}) {
    const std::size_t eq = u.find('=');
    const bool named = eq != std::string::npos && u.find("://") > eq;
    // A URL alone is the first API's, where any other path goes.
    const std::string first(wire::wire_formats().front()->upstream_key());
    if (!add_upstream(named ? u.substr(0, eq) : first, named ? u.substr(eq + 1) : u, "upstream")) return kExitBadInput;
  }
  if (auto u = args->get("openai-upstream"); u && !add_upstream("openai", *u, "openai-upstream")) return kExitBadInput;
  if (auto u = args->get("gemini-upstream"); u && !add_upstream("gemini", *u, "gemini-upstream")) return kExitBadInput;

  if (auto l = args->get("listen"))
    if (auto parsed = parse_listen_address(*l); !parsed) return command.usage_error("--listen: " + parsed.error().message);
  auto logger = spdlog::stderr_logger_mt("serve");
  logger->set_pattern("compactor serve: %l: %v");
  auto level = log_level_from_environment();
  static const spdlog::level::level_enum levels[] = {spdlog::level::debug, spdlog::level::info, spdlog::level::warn,
                                                     spdlog::level::err};
  logger->set_level(levels[static_cast<int>(level ? *level : LogLevel::warn)]);
  spdlog::set_default_logger(logger);

  options.config_file = *args->get("config");
  options.listen = args->get("listen");
  options.version = COMPACTOR_VERSION;
  return serve::run_server(options);
}

// `compactor serve-worker --config F --parent PID`: the zygote `serve` starts for its pipeline
// workers, with its end of the control socket as fd 3. Not for people: it exits at once unless
// the process that started it is PID.
int serve_worker_command(int argc, char** argv) {
  const Command command{"serve-worker", "usage: compactor serve-worker --config FILE --parent PID (started by compactor serve)\n"};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2, {{"config"}, {"parent"}}, exit_code);
  if (!args) return exit_code;
  auto config = args->get("config"), parent = args->get("parent");
  if (!config || !parent || parent->find_first_not_of("0123456789") != std::string::npos || parent->empty())
    return command.usage_error("--config and --parent PID are required");
  return serve::zygote_main(*config, 3, std::stoi(*parent));
}

// `compactor serve-token --name NAME`: a token for a client of serve. Only its SHA-256 goes in the
// config, so the config can be shared and the token is shown here once.
int serve_token_command(int argc, char** argv) {
  const Command command{"serve-token", R"HELP(usage: compactor serve-token --name NAME

Makes a new client token for `compactor serve` ("cpt_" and 32 random bytes from getrandom as 64
hex digits) and prints it once, on the line "token: …", then the entry to add to the config's
serve.clients; serve stores only the token's SHA-256.
The client sends it in the x-compactor-token header (Claude Code: ANTHROPIC_CUSTOM_HEADERS; Codex:
the provider's http_headers; Gemini CLI: GEMINI_CLI_CUSTOM_HEADERS; an SDK: its default headers),
or as the bearer token to /mcp. NAME (a-z, 0-9, _ and -, up to 64) is the client's tenant: its
own conversations and archive, and its label in /metrics.

exit codes: 0 printed; 2 bad name; 3 no random bytes.
)HELP"};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2, {{"name"}}, exit_code);
  if (!args) return exit_code;
  std::string error;
  auto name = required_option(*args, "name", error);
  if (!name) return command.usage_error(error);
  if (name->empty() || name->size() > 64 || name->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos ||
      (*name)[0] == '_' || (*name)[0] == '-')
    return command.usage_error("--name: expected a-z, 0-9, _ and - (at most 64, starting with a letter or digit), got \"" + *name + "\"");
  unsigned char bytes[32];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    fmt::print(stderr, "compactor serve-token: no random bytes (getrandom failed)\n");
    return kExitPluginError;
  }
  std::string token = "cpt_";
  for (unsigned char b : bytes) token += fmt::format("{:02x}", b);
  fmt::print("token: {}\nserve.clients entry:\n    - {{name: {}, token_sha256: \"{}\"}}\n", token, *name, serve::sha256_hex(token));
  return kExitOk;
}

}  // namespace compactor::cli
