// compactor plugins [--config F] [--plugin-dir D]…: every stage, summarizer and checker plugin found, and whether it would load.
#include "command_line.hpp"
#include "commands.hpp"

#include "compactor/exit_code.hpp"
#include "compactor/pipeline_config.hpp"
#include "compactor/plugin_discovery.hpp"
#include "compactor/plugin_loader.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <set>
#include <utility>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"(usage: compactor plugins [--config FILE] [--plugin-dir DIR]…

Lists every plugin found: stages (compactor_stage_*.so), summarizer backends
(compactor_summarizer_*.so) and checkers (compactor_checker_*.so) in the config's search path
when --config is given, then each --plugin-dir, then the plugin folder of this build or install,
and the files the config names by path (`plugin:`). One line each, tab-separated:

  KIND  NAME  FILE  plugin PLUGIN VERSION  API N  COMPILER  ok
  KIND  -     FILE  -                      API N  COMPILER  refused: <why, one line>

Nothing is loaded: no plugin code runs, not even static constructors. NAME is the one the file
name declares (for a file named by path, the plugin's own name); a plugin whose API version or
build fingerprint differs, that another user could have planted, or that is not a shared library
for this machine is refused from the file alone. "ok" means it passes these checks; a missing
dependency or a failing registration shows when a pipeline loads it. Exits 0 when every plugin
found passes, 3 when any does not.
)";

}  // namespace

int plugins_command(int argc, char** argv) {
  std::string error;
  auto args = parse_args(argc, argv, 2, {{"config"}, {"plugin-dir", true, true}}, error);
  if (!args || !args->positional.empty()) {
    fmt::print(stderr, "compactor plugins: {}\n{}", args ? "unexpected argument " + args->positional.front() : error, kHelp);
    return kExitBadInput;
  }
  if (args->help) {
    fmt::print("{}", kHelp);
    return kExitOk;
  }
  std::vector<std::string> dirs;
  std::vector<std::string> named;  // by path in the config
  if (auto config = args->get("config")) {
    auto from_config = config_plugin_paths(*config);
    if (!from_config) {
      fmt::print(stderr, "{}\n", from_config.error().message);
      return kExitBadInput;
    }
    dirs = std::move(from_config->dirs);
    named = std::move(from_config->files);
  }
  if (args->has("plugin-dir"))
    for (const auto& d : args->options.at("plugin-dir")) dirs.push_back(d);
  if (!args->has("config"))
    for (const auto& d : env_plugin_dirs()) dirs.push_back(d);
  for (const auto& d : default_plugin_dirs()) dirs.push_back(d);

  int exit_code = kExitOk;
  std::size_t listed = 0;
  auto list = [&](const std::string& kind, const std::string& file, std::string name) {
    ++listed;
    PluginProbe probe = probe_plugin(file);
    std::string api = probe.api_version ? std::to_string(probe.api_version) : "?";
    std::string compiler = probe.compiler.empty() ? "-" : probe.compiler;
    if (!probe.loadable) {
      fmt::print("{}\t-\t{}\t-\tAPI {}\t{}\trefused: {}\n", kind, file, api, compiler, probe.refusal);
      exit_code = kExitPluginError;
      return;
    }
    // Listed from the file alone: the name its file name declares, the plugin's name and version
    // from its info bytes. No plugin code runs (not even static constructors).
    if (name.empty()) name = probe.name.empty() ? "?" : probe.name;
    fmt::print("{}\t{}\t{}\tplugin {} {}\tAPI {}\t{}\tok\n", kind, name, file, probe.name.empty() ? "?" : probe.name,
               probe.version.empty() ? "?" : probe.version, probe.api_version, probe.compiler.empty() ? "?" : probe.compiler);
  };
  std::set<std::string> seen;
  for (const auto& [kind, prefix] : {std::pair<std::string, std::string>{"stage", "compactor_stage_"},
                                     {"summarizer", "compactor_summarizer_"},
                                     {"checker", "compactor_checker_"}})
    for (const auto& file : list_plugin_files(dirs, prefix)) {
      seen.insert(std::filesystem::weakly_canonical(file).string());
      std::string stem = std::filesystem::path(file).stem().string();
      list(kind, file, stem.substr(prefix.size()));
    }
  for (const auto& file : named) {
    if (!seen.insert(std::filesystem::weakly_canonical(file).string()).second) continue;
    std::string stem = std::filesystem::path(file).stem().string();
    std::string kind = stem.rfind("compactor_summarizer_", 0) == 0 ? "summarizer" : stem.rfind("compactor_checker_", 0) == 0 ? "checker" : "stage";
    list(kind, file, "");
  }
  if (listed == 0) fmt::print(stderr, "compactor plugins: no compactor_stage_*, compactor_summarizer_* or compactor_checker_*.so in any searched folder\n");
  return exit_code;
}

}  // namespace compactor::cli
