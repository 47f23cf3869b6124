// The YAML config loader on any bytes: never a crash, and every refusal is lines that name the
// file (file:line:col where there is a position).
#include "host/pipeline_config.hpp"
#include "fuzz_check.hpp"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const FuzzScratch scratch("fuzz-config", ".yaml");
  const std::string& path = scratch.path();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto result = compactor::load_pipeline_config(path);
  FUZZ_CHECK(result.config.has_value() != !result.errors.empty(), "a config and errors, or neither");
  for (const auto& e : result.errors) FUZZ_CHECK(e.rfind(path, 0) == 0, "an error that does not name the file: " + e);
  return 0;
}
