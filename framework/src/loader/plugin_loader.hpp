// Loads stage plugins with Boost.DLL. Before any plugin code runs (no dlopen, so not even its
// static constructors), the loader reads the file's symbol table and refuses a plugin whose entry
// symbol names another API version or build fingerprint. Accepted libraries are loaded
// RTLD_LOCAL | RTLD_NOW and never unloaded while the process runs (committed messages may outlive
// their stage). Every call into a plugin is guarded: an exception becomes an Error naming the
// stage and the file.
#pragma once

#include "compactor/error.hpp"
#include "compactor/plugin.hpp"
#include "compactor/stage.hpp"

#include <map>
#include <optional>
#include <string_view>
#include <memory>
#include <string>
#include <vector>

namespace compactor {

// What a file says about itself, read from its symbol table without loading it.
struct PluginProbe {
  std::string file;
  bool loadable = false;
  std::string refusal;      // one line, when not loadable
  int api_version = 0;      // from the entry symbol, when there is one
  std::string fingerprint;  // from the entry symbol, when there is one
  std::string name;         // from the plugin's info bytes, when it has them
  std::string version;
  std::string compiler;     // "gcc 12.2", "clang 14.0"; empty for plugins built before it was recorded
  std::vector<std::string> provides;  // "stage:micro", "checker:x", "summarizer:y", as the file declares
  bool provides_named(std::string_view kind, std::string_view wanted) const;
};
// Refused before anything else: a file that it or its folder lets every user write, or that
// belongs to another user who is not root (it may have been planted); the environment variable
// set to 1 loads such files anyway.
inline constexpr const char* kTrustPluginsVariable = "COMPACTOR_TRUST_PLUGINS";
PluginProbe probe_plugin(const std::string& file);

// The file in `dirs` that provides `kind` ("stage", "summarizer", "checker") `name`: the file named
// for it (compactor_stage_<name>.so…) first, else the first plugin file whose declared names
// include it (a file with several stages). Read from the files, no plugin code runs.
std::optional<std::string> find_provider(std::string_view kind, const std::string& name, const std::vector<std::string>& dirs);

struct LoadedPlugin {
  std::string file;  // the real path
  std::string name;
  std::string version;
  int api_version = 0;
  std::vector<std::string> stages;       // names it registered, in order
  std::vector<std::string> summarizers;  // summarizer kinds it registered
  std::vector<std::string> checkers;     // checker names it registered
};

struct RegisteredStage {
  const StageInfo* info = nullptr;
  const LoadedPlugin* plugin = nullptr;  // null for a stage registered in-process
  std::string file() const { return plugin != nullptr ? plugin->file : "<built-in>"; }
};

struct RegisteredSummarizer {
  const SummarizerInfo* info = nullptr;
  const LoadedPlugin* plugin = nullptr;  // null for the built-in ones
  std::string file() const { return plugin != nullptr ? plugin->file : "<built-in>"; }
};

struct RegisteredChecker {
  const CheckerInfo* info = nullptr;
  const LoadedPlugin* plugin = nullptr;
  std::string file() const { return plugin != nullptr ? plugin->file : "<built-in>"; }
};

// Process-wide: a library is loaded once per real path and stays loaded.
class PluginRegistry {
 public:
  static PluginRegistry& instance();

  // Loads the library (once per real path) and registers its stages. Refusals and failures are
  // one line naming the file.
  Expected<const LoadedPlugin*> load(const std::string& file);

  // For stages and checkers compiled into the host or a test program. A second in-process one of
  // the same name replaces the first (the test kit registers the stage each test gives it); a
  // plugin's is never replaced.
  Expected<const RegisteredStage*> add_builtin(StageInfo info);
  Expected<const RegisteredChecker*> add_builtin_checker(CheckerInfo info);
  Expected<const RegisteredSummarizer*> add_builtin_summarizer(SummarizerInfo info);

  const RegisteredStage* find_stage(const std::string& name) const;
  std::vector<std::string> stage_names() const;
  const RegisteredSummarizer* find_summarizer(const std::string& name) const;
  std::vector<std::string> summarizer_names() const;
  const RegisteredChecker* find_checker(const std::string& name) const;
  // A plugin checker made from its params, knowing the name it was registered under.
  static Expected<std::unique_ptr<Checker>> make_checker(const RegisteredChecker& checker, const ParamValues& params);

  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

 private:
  PluginRegistry() = default;
  struct Library;
  std::map<std::string, std::unique_ptr<Library>> libraries_;  // by real path
  std::map<std::string, RegisteredStage> stages_;              // by stage name
  std::vector<std::unique_ptr<StageInfo>> builtins_;
  std::map<std::string, RegisteredSummarizer> summarizers_;    // by kind
  std::vector<std::unique_ptr<SummarizerInfo>> builtin_summarizers_;
  std::map<std::string, RegisteredChecker> checkers_;          // by name (plugin and in-process checkers)
  std::vector<std::unique_ptr<CheckerInfo>> builtin_checkers_;
};

// A plugin checker made from its validated params, every call guarded: an exception becomes a
// violation naming it and its file (the candidate is rejected: a rule that cannot be evaluated
// does not pass).
Expected<CheckerPtr> create_guarded_checker(const RegisteredChecker& checker, const ParamValues& params);

// Guarded calls into stage code: exceptions become Errors naming stage and file.
Expected<std::unique_ptr<Stage>> create_stage(const RegisteredStage& stage, const ParamValues& params);
Expected<StageResult> run_stage(Stage& instance, const RegisteredStage& stage, const Conversation& committed,
                                const StageContext& context);

// The summarizer a stage is handed: the backend, with every call guarded so that an exception in
// it becomes an Error naming the backend and its file, which the stage turns into a decline.
Expected<std::unique_ptr<Summarizer>> create_guarded_summarizer(const RegisteredSummarizer& summarizer,
                                                                const ParamValues& params);

}  // namespace compactor
