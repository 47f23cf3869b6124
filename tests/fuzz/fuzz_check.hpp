// What a fuzz target asserts: a property that fails prints why and aborts, which libFuzzer
// reports as a crash (and saves the input) and a corpus replay under ctest reports as a failure.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(condition, message)                                                        \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "property failed: %s: %s\n", #condition, std::string(message).c_str()); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

#include <filesystem>
#include <system_error>
#include <unistd.h>

// A scratch path (`<tmp>/compactor-<name>-<pid><suffix>`) removed when the fuzzer exits normally
// (libFuzzer ends a timed run with exit()); after a crash it stays beside the saved input.
class FuzzScratch {
 public:
  explicit FuzzScratch(const std::string& name, const std::string& suffix = "")
      : path_((std::filesystem::temp_directory_path() / ("compactor-" + name + "-" + std::to_string(::getpid()) + suffix)).string()) {}
  ~FuzzScratch() {
    if (::getpid() != owner_) return;  // a forked child that calls exit() leaves its parent's files
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  FuzzScratch(const FuzzScratch&) = delete;
  FuzzScratch& operator=(const FuzzScratch&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  pid_t owner_ = ::getpid();
};
