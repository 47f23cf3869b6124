// compactor mcp (--config FILE | --archive DIR) [--tenant T]: the archive's MCP server over stdio.
#include "command_line.hpp"
#include "commands.hpp"

#include "archive/folder_trust.hpp"
#include "host/exit_code.hpp"
#include "host/pipeline_config.hpp"
#include "mcp/archive_server.hpp"
#include "mcp/stdio_transport.hpp"
#include "serve/tenant.hpp"
#include "store/store.hpp"

#include <fmt/core.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <sys/stat.h>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"(usage: compactor mcp (--config FILE | --archive DIR) [--tenant T | --tenant-key-env NAME]

An MCP server over stdio (JSON-RPC, one message a line on stdin and stdout; logs on stderr) that
gives the model back what Compactor archived, through two tools:
  restore {receipt, offset?, max_chars?}  what a receipt holds, as the model saw it, in pages
  search {pattern, receipt}              the lines holding pattern there and in what it names
An agent starts it (docs/mcp.md gives the set-up for Claude Code, Codex, Gemini CLI, Qwen Code).

options:
  --config FILE   the config compactor serve runs with: its store (store: redis reads the Redis
                  it names, from any machine), else its archive.dir, which must be absolute
  --archive DIR   the archive folder itself, absolute
  --tenant T      the tenant whose archive to serve (serve's client name, or key-<16 hex>);
                  without it, the default namespace
  --tenant-key-env NAME
                  the tenant of the API key in environment variable NAME, as serve derives it
                  when it has no clients configured (ANTHROPIC_API_KEY, say): one developer's
                  own archive, with no id to look up

The folder must be the one serve writes, whatever folder the agent starts this server in, so a
relative one is refused: serve resolves it against the folder serve runs in, which this server
cannot know. A folder owned by another user (other than root) or writable by every user is refused.

exit codes: 0 the client ended the session; 2 bad arguments, an unreadable config, or an archive
folder that is relative, not a folder, or not trusted.
)";

}  // namespace

int mcp_command(int argc, char** argv) {
  const Command command{"mcp", kHelp};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2, {{"config"}, {"archive"}, {"tenant"}, {"tenant-key-env"}}, exit_code);
  if (!args) return exit_code;
  if (!args->positional.empty()) return command.usage_error("unexpected argument " + args->positional.front());
  if (args->has("config") == args->has("archive")) return command.usage_error("give one of --config FILE and --archive DIR");
  std::string tenant = args->get("tenant").value_or("");
  if (args->has("tenant") && !is_tenant_id(tenant))
    return command.usage_error("--tenant \"" + tenant + "\" is not a tenant id ([a-z0-9][a-z0-9_-]{0,63})");
  if (auto env = args->get("tenant-key-env")) {
    if (args->has("tenant")) return command.usage_error("give one of --tenant and --tenant-key-env");
    const char* key = std::getenv(env->c_str());
    if (key == nullptr || *key == '\0') return command.usage_error("--tenant-key-env: the environment variable " + *env + " is not set");
    tenant = serve::tenant_of_key(key);
  }

  std::string dir;
  if (auto config = args->get("config")) {
    auto written = config_store_settings(*config);
    if (!written) {
      fmt::print(stderr, "compactor mcp: {}\n", written.error().message);
      return kExitBadInput;
    }
    if (written->store.kind == StoreConfig::Kind::redis) {
      std::signal(SIGPIPE, SIG_IGN);
      const mcp::ArchiveServer archive(std::make_unique<mcp::ArchiveTools>(store::open_store(written->store, "", tenant), ""), COMPACTOR_VERSION);
      mcp::serve_stdio(archive.server());
      return kExitOk;
    }
    dir = written->archive_dir;
    if (!std::filesystem::path(dir).is_absolute()) {
      fmt::print(stderr,
                 "compactor mcp: {}: archive.dir \"{}\" is relative, and serve resolves it against the folder it runs in, "
                 "which this server cannot know: set an absolute archive.dir there, or give --archive with the absolute "
                 "folder serve writes\n",
                 *config, dir);
      return kExitBadInput;
    }
  } else {
    dir = *args->get("archive");
    if (!std::filesystem::path(dir).is_absolute()) {
      fmt::print(stderr,
                 "compactor mcp: --archive \"{}\" is relative, and the agent starts this server in a folder of its "
                 "choosing: give the absolute folder serve writes (its archive.dir, resolved against the folder serve "
                 "runs in)\n",
                 dir);
      return kExitBadInput;
    }
  }
  // One spelling per folder: the pack indexes read are cached by the folder's name.
  dir = std::filesystem::path(store::tenant_folder(dir, tenant)).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();

  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    fmt::print(stderr, "compactor mcp: {}: not a folder; give the archive folder serve writes\n", dir);
    return kExitBadInput;
  }
  if (auto distrust = archive_folder_distrust(dir)) {
    fmt::print(stderr, "compactor mcp: refused: the archive {}\n", *distrust);
    return kExitBadInput;
  }
  if (::stat(dir.c_str(), &st) != 0)
    fmt::print(stderr, "compactor mcp: no archive at {} yet; its receipts are served once serve archives there\n", dir);

  // A client that goes away makes a write fail (EPIPE), which ends the session, rather than the
  // signal ending the process.
  std::signal(SIGPIPE, SIG_IGN);
  const mcp::ArchiveServer archive(dir, COMPACTOR_VERSION);
  mcp::serve_stdio(archive.server());
  return kExitOk;
}

}  // namespace compactor::cli
