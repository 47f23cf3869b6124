// compactor: keeps an agent's conversation inside the model's context window.
#include "commands.hpp"

#include "compactor/build_fingerprint.hpp"
#include "host/exit_code.hpp"
#include "host/stderr_logger.hpp"

#include <fmt/core.h>

#include <exception>
#include <string_view>

namespace {

constexpr const char* kUsage = R"(usage: compactor COMMAND [options]

commands:
  run             --config F --input F [--output F] [--report F] [--request TEXT]
                  [--reason prompt_too_long]
                           run a pipeline on a conversation
  check           --input F [--request TEXT]
                           validate a conversation against the checkers
  validate        --config F
                           load, validate and build a pipeline without running it
  print-pipeline  --config F
                           print the normalized, resolved pipeline (feed-back-able YAML)
  plugins         [--config F] [--plugin-dir D]…
                           list stage plugins and whether each would load
  restore         RECEIPT [--archive DIR]
                           print what the archive holds under a receipt, verified
  import          --input F [--input-format F] [--output F] [--output-format F] [--report F]
  import          --corpus DIR [--report F] [--sidechains skip]
                           Claude Code session logs and OpenAI histories → Anthropic messages
  count           --input F [--meter KIND]… [--fit F [--family NAME]] [--per-message]
                           count a conversation's tokens with each meter
  calibrate       --corpus DIR [--out F] [--report F] [--base KIND]
                           fit a calibrated meter to the usage Claude Code recorded; its error
  bench           --corpus DIR --config F [--config F]… [--out DIR] [--jobs N] [--shard I/N]
                  [--prices F] [--window TOKENS] [--meter KIND] [--model NAME]
  bench           --corpus DIR --sweep F [--config F]…
  bench           --merge DIR [--merge DIR]… --out DIR
                           replay every session call by call through each pipeline (or a
                           sweep's grid): tokens sent, prompt-cache reuse, cost, retention,
                           the evidence the agent used
  replay          --through URL SESSION [--header "NAME: VALUE"]…
                           send a recorded session to a running serve call by call, as its
                           agent would; print what serve did with each call
  serve           --config F [--listen HOST:PORT] [--upstream [API=]URL]…
                           a proxy in front of the model APIs that compacts every request
  serve-token     --name NAME
                           a new client token for serve.clients (printed once) and its config line
  mcp             --config F | --archive DIR
                           an MCP server over stdio: the model restores and searches the archive
  archive gc      --keep-days N [--archive DIR]
                           remove archive blobs older than N days

  compactor COMMAND --help  shows a command's options.
  compactor --version       prints the version, the plugin API version, the build fingerprint and the compiler.

exit codes: 0 ok; 1 ran but still over budget, or a stage's candidate was rejected;
            2 bad input or bad config; 3 plugin failure or internal error.
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace compactor;
  if (argc < 2) {
    fmt::print(stderr, "{}", kUsage);
    return kExitBadInput;
  }
  std::string_view command = argv[1];
  try {
    if (command == "--help" || command == "-h" || command == "help") {
      fmt::print("{}", kUsage);
      return kExitOk;
    }
    if (command == "--version") {
      fmt::print("compactor {}\nplugin API {}\nfingerprint {}\ncompiler {}\n", COMPACTOR_VERSION, kApiVersion, kBuildFingerprint, kCompiler);
      return kExitOk;
    }
    if (auto level = log_level_from_environment(); !level) {
      fmt::print(stderr, "compactor: {}\n", level.error().message);
      return kExitBadInput;
    }
    if (command == "check") return cli::check_command(argc, argv);
    if (command == "run") return cli::run_command(argc, argv);
    if (command == "validate") return cli::validate_command(argc, argv);
    if (command == "print-pipeline") return cli::print_pipeline_command(argc, argv);
    if (command == "plugins") return cli::plugins_command(argc, argv);
    if (command == "restore") return cli::restore_command(argc, argv);
    if (command == "archive") return cli::archive_command(argc, argv);
    if (command == "import") return cli::import_command(argc, argv);
    if (command == "bench") return cli::bench_command(argc, argv);
    if (command == "replay") return cli::replay_command(argc, argv);
    if (command == "count") return cli::count_command(argc, argv);
    if (command == "calibrate") return cli::calibrate_command(argc, argv);
    if (command == "serve") return cli::serve_command(argc, argv);
    if (command == "serve-worker") return cli::serve_worker_command(argc, argv);
    if (command == "serve-token") return cli::serve_token_command(argc, argv);
    if (command == "mcp") return cli::mcp_command(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "compactor {}: internal error: {}\n", command, e.what());
    return kExitPluginError;
  }
  fmt::print(stderr, "compactor: unknown command \"{}\"\n{}", command, kUsage);
  return kExitBadInput;
}
