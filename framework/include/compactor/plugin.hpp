// What a plugin shared library exports: exactly one `extern "C"` entry point, whose name encodes
// the plugin API version and the build fingerprint, returning a plain descriptor. Stages are
// registered from the descriptor's callback, never from static constructors.
//
//   static void register_stages(compactor::PluginRegistrar& r) { r.add_stage({...}); }
//   COMPACTOR_PLUGIN("my_plugin", "1.0.0", "stage:my_stage", register_stages)
//
// The third argument names, space-separated, everything the plugin registers ("stage:a stage:b
// checker:c summarizer:d"): the host reads it from the file without running plugin code, to find a
// stage in a file of several and to list plugins, and refuses a plugin that registers otherwise.
#pragma once

#include "compactor/build_fingerprint.hpp"
#include "compactor/checker.hpp"
#include "compactor/stage.hpp"
#include "compactor/summarizer.hpp"

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
