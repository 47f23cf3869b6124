// The build fingerprint: what must match between the host and a plugin for C++ objects to cross
// between them safely. It names what decides the layout of the standard types that cross the
// boundary (std::string, std::vector, std::function, std::optional…): the standard library and
// its release, its string ABI, its debug mode (`_GLIBCXX_DEBUG` changes every container), then
// Boost (Boost.JSON values cross), spdlog and fmt (the host's logger is built on them; kept while
// their versions are what Debian ships with Boost 1.81), and AddressSanitizer. The compiler is not
// part of it: clang with libstdc++ lays these types out as g++ does, so a clang-built plugin with
// the same fingerprint loads; it is recorded apart (COMPACTOR_COMPILER) to name it in messages.
// Computed from the compilers' and libraries' own macros, so a plugin's copy of this header
// describes the plugin's build and the host's copy the host's. The same components form the
// plugin entry symbol's name, so the loader can compare them without running any plugin code.
#pragma once

#include <cstddef>  // _GLIBCXX_USE_CXX11_ABI, _GLIBCXX_RELEASE or _LIBCPP_VERSION
#include <boost/version.hpp>
#include <fmt/core.h>
#include <spdlog/version.h>

// Each component can be overridden before this header is included: only test fixtures do, to
// build "a plugin for another host".
#ifndef COMPACTOR_FP_API
#define COMPACTOR_FP_API 11
#endif
#ifndef COMPACTOR_FP_BOOST
#define COMPACTOR_FP_BOOST BOOST_VERSION
#endif
#ifndef COMPACTOR_FP_ASAN
#if defined(__SANITIZE_ADDRESS__)
#define COMPACTOR_FP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COMPACTOR_FP_ASAN 1
#endif
#endif
#ifndef COMPACTOR_FP_ASAN
#define COMPACTOR_FP_ASAN 0
#endif
#endif
// libstdc++ ("libstdcxx12", string ABI 0 or 1) or libc++ ("libcxx14000", its ABI version).
#ifndef COMPACTOR_FP_STDLIB
#if defined(_LIBCPP_VERSION)
#define COMPACTOR_FP_STDLIB libcxx
#define COMPACTOR_FP_STDLIB_RELEASE _LIBCPP_VERSION
#define COMPACTOR_FP_STDLIB_ABI _LIBCPP_ABI_VERSION
#else
#define COMPACTOR_FP_STDLIB libstdcxx
#define COMPACTOR_FP_STDLIB_RELEASE _GLIBCXX_RELEASE
#define COMPACTOR_FP_STDLIB_ABI _GLIBCXX_USE_CXX11_ABI
#endif
#endif
#ifndef COMPACTOR_FP_DEBUG
#if defined(_GLIBCXX_DEBUG) || defined(_LIBCPP_ENABLE_DEBUG_MODE)
#define COMPACTOR_FP_DEBUG 1
#else
#define COMPACTOR_FP_DEBUG 0
#endif
#endif

#define COMPACTOR_STR2_(x) #x
#define COMPACTOR_STR_(x) COMPACTOR_STR2_(x)
#define COMPACTOR_CAT2_(a, b) a##b
#define COMPACTOR_CAT_(a, b) COMPACTOR_CAT2_(a, b)

// The compiler, for messages only: "gcc 12.2", "clang 14.0" (clang also defines __GNUC__ 4.2).
#if defined(__clang__)
#define COMPACTOR_COMPILER "clang " COMPACTOR_STR_(__clang_major__) "." COMPACTOR_STR_(__clang_minor__)
#else
#define COMPACTOR_COMPILER "gcc " COMPACTOR_STR_(__GNUC__) "." COMPACTOR_STR_(__GNUC_MINOR__)
#endif

// "libstdcxx12-abi1-debug0-boost108100-spdlog1.10.0-fmt90100-asan0"
#define COMPACTOR_BUILD_FINGERPRINT                                                                       \
  COMPACTOR_STR_(COMPACTOR_FP_STDLIB) COMPACTOR_STR_(COMPACTOR_FP_STDLIB_RELEASE) "-abi" COMPACTOR_STR_(    \
      COMPACTOR_FP_STDLIB_ABI) "-debug" COMPACTOR_STR_(COMPACTOR_FP_DEBUG) "-boost" COMPACTOR_STR_(        \
      COMPACTOR_FP_BOOST) "-spdlog" COMPACTOR_STR_(SPDLOG_VER_MAJOR) "." COMPACTOR_STR_(SPDLOG_VER_MINOR) "." \
      COMPACTOR_STR_(SPDLOG_VER_PATCH) "-fmt" COMPACTOR_STR_(FMT_VERSION) "-asan" COMPACTOR_STR_(COMPACTOR_FP_ASAN)

// compactor_plugin_api4__libstdcxx12__abi1__debug0__boost108100__spdlog1_10_0__fmt90100__asan0:
// the fingerprint with "-" → "__" and "." → "_", built a component at a time.
#define COMPACTOR_SYM_STDLIB_ COMPACTOR_CAT_(COMPACTOR_CAT_(__, COMPACTOR_FP_STDLIB), COMPACTOR_FP_STDLIB_RELEASE)
#define COMPACTOR_SYM_ABI_ COMPACTOR_CAT_(__abi, COMPACTOR_FP_STDLIB_ABI)
#define COMPACTOR_SYM_DEBUG_ COMPACTOR_CAT_(__debug, COMPACTOR_FP_DEBUG)
#define COMPACTOR_SYM_BOOST_ COMPACTOR_CAT_(__boost, COMPACTOR_FP_BOOST)
#define COMPACTOR_SYM_SPDLOG_ \
  COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(__spdlog, SPDLOG_VER_MAJOR), _), SPDLOG_VER_MINOR), _), SPDLOG_VER_PATCH)
#define COMPACTOR_SYM_FMT_ COMPACTOR_CAT_(__fmt, FMT_VERSION)
#define COMPACTOR_SYM_ASAN_ COMPACTOR_CAT_(__asan, COMPACTOR_FP_ASAN)
#define COMPACTOR_ENTRY_SYMBOL                                                                                 \
  COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(COMPACTOR_CAT_(      \
      COMPACTOR_CAT_(compactor_plugin_api, COMPACTOR_FP_API), COMPACTOR_SYM_STDLIB_), COMPACTOR_SYM_ABI_),     \
      COMPACTOR_SYM_DEBUG_), COMPACTOR_SYM_BOOST_), COMPACTOR_SYM_SPDLOG_), COMPACTOR_SYM_FMT_), COMPACTOR_SYM_ASAN_)

#define COMPACTOR_ENTRY_SYMBOL_NAME COMPACTOR_STR_(COMPACTOR_ENTRY_SYMBOL)

namespace compactor {

// Bumped whenever a public header changes in a way a built plugin would notice.
inline constexpr int kApiVersion = COMPACTOR_FP_API;
inline constexpr const char* kBuildFingerprint = COMPACTOR_BUILD_FINGERPRINT;
inline constexpr const char* kCompiler = COMPACTOR_COMPILER;
inline constexpr const char* kEntrySymbolPrefix = "compactor_plugin_api";

}  // namespace compactor
