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
#include <tuple>
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

// A stage, summarizer or checker the registry knows: its info and the plugin that registered it.
template <class Info>
struct Registered {
  const Info* info = nullptr;
  const LoadedPlugin* plugin = nullptr;  // null for one registered in-process
  std::string file() const { return plugin != nullptr ? plugin->file : "<built-in>"; }
};
using RegisteredStage = Registered<StageInfo>;
using RegisteredSummarizer = Registered<SummarizerInfo>;
using RegisteredChecker = Registered<CheckerInfo>;

// What the host knows of a built-in checker beside its CheckerInfo: why a config would keep it.
struct CheckerTraits {
  // It keeps what the history means or that it stays recoverable (pairs_unchanged, archived…): a
  // config whose replace_builtins leaves it out is warned.
  bool safety = false;
  // It is a model API's own rule (the Messages API's structure, pairing, unique_ids,
  // cache_control), not Compactor's invariant: it runs whatever checkers.enabled lists, and a
  // request of another API runs that API's rules (its wire format's) instead.
  bool api_rule = false;
};

// A checker that runs after every stage unless the config's replace_builtins leaves it out.
struct BuiltinChecker {
  const RegisteredChecker* entry = nullptr;
  CheckerTraits traits;
  const std::string& name() const { return entry->info->name; }
  // The checker, named as registered (a built-in one runs unguarded: it is the host's code).
  CheckerPtr make() const;
};

// Process-wide: a library is loaded once per real path and stays loaded.
class PluginRegistry {
 public:
  static PluginRegistry& instance();

  // Loads the library (once per real path) and registers what it provides. Refusals and
  // failures are one line naming the file.
  Expected<const LoadedPlugin*> load(const std::string& file);
  // The same for the `kind` ("stage", "summarizer", "checker") `name` a config asks of the file:
  // a file whose declared names (read without loading it) leave it out is refused before it is
  // loaded, so none of its code runs (not even a static constructor).
  Expected<const LoadedPlugin*> load_for(const std::string& file, std::string_view kind, const std::string& name);

  // For stages, summarizers and checkers compiled into the host or a test program (Info is
  // StageInfo, SummarizerInfo or CheckerInfo). A second in-process one of the same name replaces
  // the first (the test kit registers the stage each test gives it); a plugin's is never replaced.
  template <class Info>
  Expected<const Registered<Info>*> add_builtin(Info info);
  // A built-in checker: registered as above, and run after every stage, in the order they were
  // added (after those compiled into the host, for one a test program adds), with its traits.
  // One of the same name replaces it in place.
  Expected<const RegisteredChecker*> add_builtin(CheckerInfo info, CheckerTraits traits);
  // The built-in checkers in run order; the one of that name, or null.
  const std::vector<BuiltinChecker>& builtin_checkers() const { return builtin_checkers_; }
  const BuiltinChecker* builtin_checker(std::string_view name) const;

  // The entry of that kind and name; the names of a kind, sorted.
  template <class Info>
  const Registered<Info>* find(const std::string& name) const {
    const auto& by_name = std::get<Shelf<Info>>(shelves_).by_name;
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : &it->second;
  }
  template <class Info>
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, _] : std::get<Shelf<Info>>(shelves_).by_name) out.push_back(name);
    return out;
  }
  const RegisteredStage* find_stage(const std::string& name) const { return find<StageInfo>(name); }
  const RegisteredSummarizer* find_summarizer(const std::string& name) const { return find<SummarizerInfo>(name); }
  const RegisteredChecker* find_checker(const std::string& name) const { return find<CheckerInfo>(name); }
  std::vector<std::string> stage_names() const { return names<StageInfo>(); }
  std::vector<std::string> summarizer_names() const { return names<SummarizerInfo>(); }
  // A plugin checker made from its params, knowing the name it was registered under.
  static Expected<std::unique_ptr<Checker>> make_checker(const RegisteredChecker& checker, const ParamValues& params);

  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

 private:
  PluginRegistry() = default;
  struct Library;
  // One kind's entries by name, and the infos they point to (never freed: plugin code may hold them).
  template <class Info>
  struct Shelf {
    std::map<std::string, Registered<Info>> by_name;
    std::vector<std::unique_ptr<Info>> owned;
    const Registered<Info>* put(Info info, const LoadedPlugin* plugin) {
      owned.push_back(std::make_unique<Info>(std::move(info)));
      Registered<Info>& r = by_name[owned.back()->name];
      r = Registered<Info>{owned.back().get(), plugin};
      return &r;
    }
  };
  std::map<std::string, std::unique_ptr<Library>> libraries_;  // by real path
  std::tuple<Shelf<StageInfo>, Shelf<SummarizerInfo>, Shelf<CheckerInfo>> shelves_;
  std::vector<BuiltinChecker> builtin_checkers_;
};

// Each factory below sets `*refused` when the factory itself refused its params (it returned an
// Error: a config the plugin cannot take, exit 2), and leaves it false when the plugin failed
// (threw or returned nothing: exit 3).

// A plugin checker made from its validated params, every call guarded: an exception becomes a
// violation naming it and its file (the candidate is rejected: a rule that cannot be evaluated
// does not pass).
Expected<CheckerPtr> create_guarded_checker(const RegisteredChecker& checker, const ParamValues& params, bool* refused = nullptr);

// Guarded calls into stage code: exceptions become Errors naming stage and file.
Expected<std::unique_ptr<Stage>> create_stage(const RegisteredStage& stage, const ParamValues& params, bool* refused = nullptr);
Expected<StageResult> run_stage(Stage& instance, const RegisteredStage& stage, const Conversation& committed,
                                const StageContext& context);

// The summarizer a stage is handed: the backend, with every call guarded so that an exception in
// it becomes an Error naming the backend and its file, which the stage turns into a decline.
Expected<std::unique_ptr<Summarizer>> create_guarded_summarizer(const RegisteredSummarizer& summarizer,
                                                                const ParamValues& params, bool* refused = nullptr);

}  // namespace compactor
