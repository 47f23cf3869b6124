// compactor_meter_pack KIND RANK_FILE OUT: writes the packed form of a rank file (Tokenizer::pack),
// which Tokenizer::load maps instead of parsing the text. Run at build time for each rank file.
#include "host/atomic_file.hpp"
#include "meter/tokenizer.hpp"

#include <cstdio>
#include <string>
#include <string_view>

int main(int argc, char** argv) {
  using namespace compactor;
  if (argc != 4) {
    std::fprintf(stderr, "usage: compactor_meter_pack cl100k_base|o200k_base|claude-legacy|r50k_base|p50k_base RANK_FILE OUT\n");
    return 2;
  }
  std::string_view name = argv[1];
  TokenizerKind kind;
  if (name == "cl100k_base") kind = TokenizerKind::cl100k_base;
  else if (name == "o200k_base") kind = TokenizerKind::o200k_base;
  else if (name == "claude-legacy") kind = TokenizerKind::claude_legacy;
  else if (name == "r50k_base") kind = TokenizerKind::r50k_base;
  else if (name == "p50k_base") kind = TokenizerKind::p50k_base;
  else {
    std::fprintf(stderr, "compactor_meter_pack: unknown tokenizer %s\n", argv[1]);
    return 2;
  }
  auto packed = Tokenizer::pack(kind, argv[2]);
  if (!packed) {
    std::fprintf(stderr, "compactor_meter_pack: %s\n", packed.error().message.c_str());
    return 1;
  }
  if (auto written = write_file_atomically(argv[3], *packed); !written) {
    std::fprintf(stderr, "compactor_meter_pack: %s\n", written.error().message.c_str());
    return 1;
  }
  return 0;
}
