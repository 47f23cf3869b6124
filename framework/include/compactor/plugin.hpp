// What a plugin shared library exports: exactly one `extern "C"` entry point, whose name encodes
// the plugin API version and the build fingerprint, returning a plain descriptor. What it provides
// is registered from the descriptor's callback, never from static constructors.
//
// A plugin that provides one stage, summarizer or checker gives its name once:
//
//   static StageInfo my_stage() { StageInfo info; info.description = "…"; …; return info; }
//   COMPACTOR_STAGE("my_stage", "1.0.0", my_stage)
//
// The name is the plugin's and the stage's (an empty StageInfo::name is set to it), and the build
// refuses a file named otherwise: compactor_add_stage(my_stage …) builds compactor_stage_my_stage.so
// and a COMPACTOR_STAGE("other", …) in it does not compile. COMPACTOR_SUMMARIZER and
// COMPACTOR_CHECKER do the same with compactor_add_summarizer and compactor_add_checker.
//
// A plugin that provides several registers them itself and names, space-separated, everything it
// registers:
//
//   static void register_stages(compactor::PluginRegistrar& r) { r.add_stage(…); r.add_stage(…); }
//   COMPACTOR_PLUGIN("my_plugin", "1.0.0", "stage:a stage:b checker:c", register_stages)
//
// The host reads what a plugin provides from the file without running plugin code, to find a
// stage in a file of several and to list plugins, and refuses a plugin that registers otherwise.
#pragma once

#include "compactor/build_fingerprint.hpp"
#include "compactor/checker.hpp"
#include "compactor/stage.hpp"
#include "compactor/summarizer.hpp"

#include <string_view>

namespace compactor {

class PluginRegistrar {
 public:
  virtual ~PluginRegistrar() = default;
  virtual void add_stage(StageInfo stage) = 0;
  virtual void add_summarizer(SummarizerInfo summarizer) = 0;
  virtual void add_checker(CheckerInfo checker) = 0;
};

}  // namespace compactor

extern "C" {
struct compactor_plugin_descriptor {
  int api_version;
  const char* name;
  const char* version;
  const char* fingerprint;
  // Called once, after the loader has accepted the plugin. The PluginRegistrar is a C++ object;
  // passing it is safe because the fingerprint guarantees the same compiler and libraries.
  void (*register_plugin)(compactor::PluginRegistrar& registrar);
};
}

// Beside the entry, the name, version, compiler and what it provides as plain bytes
// ("NAME\0VERSION\0COMPILER\0PROVIDES"), which `compactor plugins`, the search for a stage and the
// loader's refusals read from the file without loading it.
#define COMPACTOR_PLUGIN(NAME, VERSION, PROVIDES, REGISTER_FN)                                        \
  extern "C" __attribute__((visibility("default"), used)) const char compactor_plugin_info[] =        \
      NAME "\0" VERSION "\0" COMPACTOR_COMPILER "\0" PROVIDES;                                       \
  extern "C" __attribute__((visibility("default"))) const compactor_plugin_descriptor*                \
  COMPACTOR_ENTRY_SYMBOL(void) {                                                                      \
    static const compactor_plugin_descriptor descriptor{COMPACTOR_FP_API, NAME, VERSION,              \
                                                        COMPACTOR_BUILD_FINGERPRINT, &REGISTER_FN};   \
    return &descriptor;                                                                               \
  }

// The name compactor_add_stage/_summarizer/_checker gave the file (and its kind), when it built it.
#if defined(COMPACTOR_BUILD_NAME) && defined(COMPACTOR_BUILD_KIND)
#define COMPACTOR_CHECK_BUILD_NAME_(KIND, NAME)                                                                   \
  static_assert(std::string_view(COMPACTOR_BUILD_KIND) == #KIND && std::string_view(COMPACTOR_BUILD_NAME) == NAME, \
                "COMPACTOR_" #KIND "'s name differs from the one compactor_add_" #KIND                           \
                " gave this file: spell the plugin's name once, the same in both")
#else
#define COMPACTOR_CHECK_BUILD_NAME_(KIND, NAME) static_assert(true)
#endif

#define COMPACTOR_ONE_PLUGIN_(KIND, ADD, NAME, VERSION, INFO_FN)        \
  COMPACTOR_CHECK_BUILD_NAME_(KIND, NAME);                              \
  static void compactor_register_one_(compactor::PluginRegistrar& registrar) { \
    auto info = INFO_FN();                                              \
    if (info.name.empty()) info.name = NAME;                            \
    registrar.ADD(std::move(info));                                     \
  }                                                                     \
  COMPACTOR_PLUGIN(NAME, VERSION, #KIND ":" NAME, compactor_register_one_)

// One stage, summarizer or checker named NAME; INFO_FN() returns its StageInfo, SummarizerInfo or
// CheckerInfo (its name may be left empty).
#define COMPACTOR_STAGE(NAME, VERSION, INFO_FN) COMPACTOR_ONE_PLUGIN_(stage, add_stage, NAME, VERSION, INFO_FN)
#define COMPACTOR_SUMMARIZER(NAME, VERSION, INFO_FN) COMPACTOR_ONE_PLUGIN_(summarizer, add_summarizer, NAME, VERSION, INFO_FN)
#define COMPACTOR_CHECKER(NAME, VERSION, INFO_FN) COMPACTOR_ONE_PLUGIN_(checker, add_checker, NAME, VERSION, INFO_FN)
