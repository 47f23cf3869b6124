// compactor plugins [--plugin-dir D]…: every stage plugin found, and whether it would load.
#include "command_line.hpp"
#include "commands.hpp"

#include "compactor/exit_code.hpp"
#include "compactor/pipeline_config.hpp"
#include "compactor/plugin_discovery.hpp"
#include "compactor/plugin_loader.hpp"

#include <fmt/core.h>

#include <filesystem>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"(usage: compactor plugins [--config FILE] [--plugin-dir DIR]…

Lists every compactor_stage_*.so found (the config's search path when --config is given, then
each --plugin-dir, then the plugin folder of this build or install), one line each:

  STAGE  FILE  PLUGIN NAME VERSION  API N  ok
  -      FILE  -                    API N  refused: <why, one line>

Nothing is loaded: no plugin code runs, not even static constructors. STAGE is the one the file
name declares; a plugin whose API version or build fingerprint differs, that another user could
have planted, or that is not a shared library for this machine is refused from the file alone.
"ok" means it passes these checks; a missing dependency or a failing registration shows when a
pipeline loads it. Exits 0 when every plugin found passes, 3 when any does not.
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
  if (auto config = args->get("config")) {
    auto from_config = config_plugin_dirs(*config);
    if (!from_config) {
      fmt::print(stderr, "{}\n", from_config.error().message);
      return kExitBadInput;
    }
    dirs = *from_config;
  }
  if (args->has("plugin-dir"))
    for (const auto& d : args->options.at("plugin-dir")) dirs.push_back(d);
  if (!args->has("config"))
    for (const auto& d : env_plugin_dirs()) dirs.push_back(d);
  for (const auto& d : default_plugin_dirs()) dirs.push_back(d);

  int exit_code = kExitOk;
  auto files = list_stage_files(dirs);
  if (files.empty()) fmt::print(stderr, "compactor plugins: no compactor_stage_*.so in any searched folder\n");
  for (const auto& file : files) {
    PluginProbe probe = probe_plugin(file);
    std::string api = probe.api_version ? std::to_string(probe.api_version) : "?";
    if (!probe.loadable) {
      fmt::print("-\t{}\t-\tAPI {}\t{}\trefused: {}\n", file, api, probe.compiler.empty() ? "-" : probe.compiler, probe.refusal);
      exit_code = kExitPluginError;
      continue;
    }
    // Listed from the file alone: the stage its name declares, the plugin's name and version
    // from its info bytes. No plugin code runs (not even static constructors).
    std::string stage = std::filesystem::path(file).stem().string().substr(std::string_view("compactor_stage_").size());
    fmt::print("{}\t{}\tplugin {} {}\tAPI {}\t{}\tok\n", stage, file, probe.name.empty() ? "?" : probe.name,
               probe.version.empty() ? "?" : probe.version, probe.api_version, probe.compiler.empty() ? "?" : probe.compiler);
  }
  return exit_code;
}

}  // namespace compactor::cli
