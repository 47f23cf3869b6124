// The build fingerprint: what must match between the host and a plugin for C++ objects to cross
// between them safely (compiler, libstdc++ string ABI, Boost, spdlog, fmt, AddressSanitizer).
// Computed from the compilers' and libraries' own macros, so a plugin's copy of this header
// describes the plugin's build and the host's copy the host's. The same components form the
// plugin entry symbol's name, so the loader can compare them without running any plugin code.
#pragma once

#include <cstddef>  // _GLIBCXX_USE_CXX11_ABI
#include <boost/version.hpp>
#include <fmt/core.h>
#include <spdlog/version.h>

// Each component can be overridden before this header is included: only test fixtures do, to
// build "a plugin for another host".
#ifndef COMPACTOR_FP_API
#define COMPACTOR_FP_API 4
#endif
#ifndef COMPACTOR_FP_BOOST
#define COMPACTOR_FP_BOOST BOOST_VERSION
#endif
#ifndef COMPACTOR_FP_ASAN
#if defined(__SANITIZE_ADDRESS__)
#define COMPACTOR_FP_ASAN 1
#else
#define COMPACTOR_FP_ASAN 0
#endif
#endif

#define COMPACTOR_STR2_(x) #x
#define COMPACTOR_STR_(x) COMPACTOR_STR2_(x)
#define COMPACTOR_CAT2_(a, b) a##b
#define COMPACTOR_CAT_(a, b) COMPACTOR_CAT2_(a, b)

// "gcc12.2-cxx11abi1-boost108100-spdlog1.10.0-fmt90100-asan0"
#define COMPACTOR_BUILD_FINGERPRINT                                                                  \
  "gcc" COMPACTOR_STR_(__GNUC__) "." COMPACTOR_STR_(__GNUC_MINOR__) "-cxx11abi" COMPACTOR_STR_(     \
      _GLIBCXX_USE_CXX11_ABI) "-boost" COMPACTOR_STR_(COMPACTOR_FP_BOOST) "-spdlog" COMPACTOR_STR_(  \
      SPDLOG_VER_MAJOR) "." COMPACTOR_STR_(SPDLOG_VER_MINOR) "." COMPACTOR_STR_(SPDLOG_VER_PATCH) "-fmt" \
      COMPACTOR_STR_(FMT_VERSION) "-asan" COMPACTOR_STR_(COMPACTOR_FP_ASAN)

// compactor_plugin_api1__gcc12_2__cxx11abi1__boost108100__spdlog1_10_0__fmt90100__asan0: the
// fingerprint with "-" → "__" and "." → "_", built a component at a time.
#define COMPACTOR_SYM_GCC_ COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(__gcc, __GNUC__), _), __GNUC_MINOR__)
#define COMPACTOR_SYM_ABI_ COMPACTOR_CAT_(__cxx11abi, _GLIBCXX_USE_CXX11_ABI)
#define COMPACTOR_SYM_BOOST_ COMPACTOR_CAT_(__boost, COMPACTOR_FP_BOOST)
#define COMPACTOR_SYM_SPDLOG_ \
  COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(__spdlog, SPDLOG_VER_MAJOR), _), SPDLOG_VER_MINOR), _), SPDLOG_VER_PATCH)
#define COMPACTOR_SYM_FMT_ COMPACTOR_CAT_(__fmt, FMT_VERSION)
#define COMPACTOR_SYM_ASAN_ COMPACTOR_CAT_(__asan, COMPACTOR_FP_ASAN)
#define COMPACTOR_ENTRY_SYMBOL                                                                           \
  COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_( \
      compactor_plugin_api, COMPACTOR_FP_API), COMPACTOR_SYM_GCC_), COMPACTOR_SYM_ABI_), COMPACTOR_SYM_BOOST_), \
      COMPACTOR_SYM_SPDLOG_), COMPACTOR_SYM_FMT_), COMPACTOR_SYM_ASAN_)

#define COMPACTOR_ENTRY_SYMBOL_NAME COMPACTOR_STR_(COMPACTOR_ENTRY_SYMBOL)

namespace compactor {

// Bumped whenever a public header changes in a way a built plugin would notice.
inline constexpr int kApiVersion = COMPACTOR_FP_API;
inline constexpr const char* kBuildFingerprint = COMPACTOR_BUILD_FINGERPRINT;
inline constexpr const char* kEntrySymbolPrefix = "compactor_plugin_api";

}  // namespace compactor
