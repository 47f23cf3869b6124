// Compiled by CompactorConfig.cmake (try_compile) with the consumer's compiler and flags: it
// builds only when a plugin built that way would carry the host's fingerprint. Run (try_run), it
// prints the fingerprint those flags give, for the error message.
#include "compactor/build_fingerprint.hpp"

#include <cstdio>
#include <string_view>

#ifdef COMPACTOR_EXPECTED_FINGERPRINT
static_assert(std::string_view(COMPACTOR_BUILD_FINGERPRINT) == COMPACTOR_EXPECTED_FINGERPRINT,
              "a plugin built with this compiler and these flags would be refused by the Compactor host");
#endif

int main() {
  std::printf("%s (%s)", COMPACTOR_BUILD_FINGERPRINT, COMPACTOR_COMPILER);
  return 0;
}
