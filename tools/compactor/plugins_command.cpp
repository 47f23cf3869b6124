// compactor plugins [--config F] [--plugin-dir D]…: every stage, summarizer and checker plugin found, and whether it would load.
#include "command_line.hpp"
#include "commands.hpp"

#include "host/exit_code.hpp"
#include "host/pipeline_config.hpp"
#include "loader/plugin_discovery.hpp"
#include "loader/plugin_loader.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <set>
#include <utility>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"(usage: compactor plugins [--config FILE] [--plugin-dir DIR]…

Lists every plugin file found (compactor_*.so: stages, summarizer backends, checkers) in the
config's search path when --config is given, then each --plugin-dir, then the plugin folder of
this build or install, and the files the config names by path (`plugin:`). One line for each
stage, summarizer and checker a file declares, tab-separated:

  KIND  NAME  FILE  plugin PLUGIN VERSION  API N  COMPILER  ok
  KIND  -     FILE  -                      API N  COMPILER  refused: <why, one line>

Nothing is loaded: no plugin code runs, not even static constructors. KIND and NAME are what the
file declares in COMPACTOR_PLUGIN (a file with several stages has a line for each); a plugin whose API version or
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
    // Listed from the file alone: what it declares, the plugin's name and version from its info
    // bytes. No plugin code runs (not even static constructors).
    std::vector<std::pair<std::string, std::string>> names;  // kind, name
    for (const std::string& p : probe.provides)
      if (std::size_t colon = p.find(':'); colon != std::string::npos) names.emplace_back(p.substr(0, colon), p.substr(colon + 1));
    if (names.empty()) names.emplace_back(kind, name.empty() ? (probe.name.empty() ? "?" : probe.name) : name);
    for (const auto& [k, n] : names)
      fmt::print("{}\t{}\t{}\tplugin {} {}\tAPI {}\t{}\tok\n", k, n, file, probe.name.empty() ? "?" : probe.name,
                 probe.version.empty() ? "?" : probe.version, probe.api_version, probe.compiler.empty() ? "?" : probe.compiler);
  };
  // A file's kind and name from its file name, for one that declares nothing (or is refused).
  auto from_file_name = [](const std::string& file) -> std::pair<std::string, std::string> {
    std::string stem = std::filesystem::path(file).stem().string();
    for (const char* kind : {"stage", "summarizer", "checker"})
      if (std::string prefix = std::string("compactor_") + kind + "_"; stem.rfind(prefix, 0) == 0) return {kind, stem.substr(prefix.size())};
    return {"stage", ""};
  };
  std::set<std::string> seen;
  for (const auto& file : list_plugin_files(dirs, "compactor_")) {
    seen.insert(std::filesystem::weakly_canonical(file).string());
    auto [kind, name] = from_file_name(file);
    list(kind, file, name);
  }
  for (const auto& file : named) {
    if (!seen.insert(std::filesystem::weakly_canonical(file).string()).second) continue;
    list(from_file_name(file).first, file, "");
  }
  if (listed == 0) fmt::print(stderr, "compactor plugins: no compactor_*.so plugin in any searched folder\n");
  return exit_code;
}

}  // namespace compactor::cli
