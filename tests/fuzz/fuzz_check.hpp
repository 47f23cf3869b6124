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
