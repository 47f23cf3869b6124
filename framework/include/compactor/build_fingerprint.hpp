// The build fingerprint: what must match between the host and a plugin for C++ objects to cross
// between them safely. Computed from the compiler's own macros, so a plugin's copy of this
// header describes the plugin's build, and the host's copy the host's.
#pragma once

#include <boost/version.hpp>
#include <fmt/core.h>
#include <spdlog/version.h>

#define COMPACTOR_STR2(x) #x
#define COMPACTOR_STR(x) COMPACTOR_STR2(x)

#if defined(__SANITIZE_ADDRESS__)
#define COMPACTOR_FP_SANITIZE "asan+ubsan"
#else
#define COMPACTOR_FP_SANITIZE "none"
#endif

// "gcc12.2-cxx11abi1-boost108100-spdlog11000-fmt90100-san_none"
#define COMPACTOR_BUILD_FINGERPRINT                                                                 \
  "gcc" COMPACTOR_STR(__GNUC__) "." COMPACTOR_STR(__GNUC_MINOR__) "-cxx11abi" COMPACTOR_STR(        \
      _GLIBCXX_USE_CXX11_ABI) "-boost" COMPACTOR_STR(BOOST_VERSION) "-spdlog" COMPACTOR_STR(SPDLOG_VER_MAJOR) \
      COMPACTOR_STR(SPDLOG_VER_MINOR) COMPACTOR_STR(SPDLOG_VER_PATCH) "-fmt" COMPACTOR_STR(FMT_VERSION) "-san_" COMPACTOR_FP_SANITIZE

namespace compactor {

// Bumped whenever a public header changes in a way a built plugin would notice.
inline constexpr int kApiVersion = 1;
inline constexpr const char* kBuildFingerprint = COMPACTOR_BUILD_FINGERPRINT;

}  // namespace compactor
