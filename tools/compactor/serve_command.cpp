// compactor serve --config F [--listen HOST:PORT] [--upstream URL] [--openai-upstream URL] [--gemini-upstream URL]
#include "command_line.hpp"
#include "commands.hpp"
#include "serve/server.hpp"
#include "serve/zygote_main.hpp"

#include "host/exit_code.hpp"
#include "host/stderr_logger.hpp"

#include <fmt/core.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"HELP(usage: compactor serve --config FILE [--listen HOST:PORT] [--upstream URL]
                       [--openai-upstream URL] [--gemini-upstream URL]

An HTTP proxy in front of the model API: POST /v1/messages (Anthropic Messages), POST
/v1/chat/completions (OpenAI Chat Completions), POST /v1/responses (OpenAI Responses) and POST
/v1beta/models/M:generateContent and :streamGenerateContent (Gemini) bodies have their
conversation compacted by the config's pipeline (system and tools counted; what the conversation
model has no place for carried as it came) and are forwarded with the client's headers; the
upstream's response comes back unchanged, server-sent events chunk by chunk. A Gemini request that
declares no functions, asks for a structured answer or names a cachedContent is passed through
(docs/gemini.md); the Gemini API's other paths go to the Gemini upstream, and every other path is
passed through. POST /mcp (the archive's restore and search tools, docs/mcp.md), GET /healthz and
GET /metrics (Prometheus text) are answered by the server. Pipelines run in worker processes (at
most serve.workers at once), never in the server itself (docs/serve.md).

options:
  --config FILE          the pipeline, with its `serve:` section (listen, upstreams, limits)
  --listen HOST:PORT     overrides serve.listen (default 127.0.0.1:8088; port 0: any free port)
  --upstream URL         overrides serve.upstream (Anthropic Messages API base URL; required,
                         whatever the clients are)
  --openai-upstream URL  overrides serve.openai_upstream (OpenAI-compatible base URL, for Chat
                         Completions and Responses; default: the --upstream URL)
  --gemini-upstream URL  overrides serve.gemini_upstream (Gemini API base URL, default
                         https://generativelanguage.googleapis.com)

The first line on stdout is "compactor serve: listening on http://HOST:PORT (upstream URL)".
SIGHUP, or a change to the config file, reloads it (validated in full; a bad one is refused and
the old one keeps serving). SIGTERM or SIGINT drains the requests in flight, then exits.

exit codes: 0 drained; 1 requests were still in flight at the time limit; 2 bad config, options
or listen address; 3 a plugin failed to load.
)HELP";

}  // namespace

int serve_command(int argc, char** argv) {
  const Command command{"serve", kHelp};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2, {{"config"}, {"listen"}, {"upstream"}, {"openai-upstream"}, {"gemini-upstream"}}, exit_code);
  if (!args) return exit_code;
  if (!args->positional.empty()) return command.usage_error("unexpected argument " + args->positional.front());
  if (!args->get("config")) return command.usage_error("--config is required");
  for (const char* key : {"upstream", "openai-upstream", "gemini-upstream"})
    if (auto u = args->get(key); u && u->rfind("http://", 0) != 0 && u->rfind("https://", 0) != 0)
      return command.usage_error(fmt::format("--{} expects an http:// or https:// URL, got \"{}\"", key, *u));

  if (auto l = args->get("listen")) {
    std::size_t colon = l->rfind(':');
    bool ok = colon != std::string::npos && colon > 0 && colon + 1 < l->size() && l->size() - colon - 1 <= 5 &&
              l->find_first_not_of("0123456789", colon + 1) == std::string::npos && std::stoul(l->substr(colon + 1)) <= 65535;
    if (!ok) return command.usage_error(fmt::format("--listen expects HOST:PORT (port 0 to 65535), got \"{}\"", *l));
  }
  auto logger = spdlog::stderr_logger_mt("serve");
  logger->set_pattern("compactor serve: %l: %v");
  auto level = log_level_from_environment();
  static const spdlog::level::level_enum levels[] = {spdlog::level::debug, spdlog::level::info, spdlog::level::warn,
                                                     spdlog::level::err};
  logger->set_level(levels[static_cast<int>(level ? *level : LogLevel::warn)]);
  spdlog::set_default_logger(logger);

  serve::ServeOptions options;
  options.config_file = *args->get("config");
  options.listen = args->get("listen");
  options.upstream = args->get("upstream");
  options.openai_upstream = args->get("openai-upstream");
  options.gemini_upstream = args->get("gemini-upstream");
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

}  // namespace compactor::cli
