// Exact byte-level BPE tokenizers: OpenAI's cl100k_base and o200k_base, and Claude's legacy
// tokenizer (the one @anthropic-ai/tokenizer ships: GPT-2's split pattern, NFKC first, its five
// special tokens recognised). Loaded from the rank files tools/setup.sh fetches; counting never
// touches the network. Thread-safe once loaded.
#pragma once

#include "compactor/error.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

// r50k_base and p50k_base (GPT-2/3) are here because their published test vectors exercise the
// split pattern Claude's legacy tokenizer shares; they are not meters.
enum class TokenizerKind { cl100k_base, o200k_base, claude_legacy, r50k_base, p50k_base };
std::string_view to_string(TokenizerKind kind);

// The rank file a tokenizer is loaded from, inside a data folder.
std::string_view rank_file_name(TokenizerKind kind);

// Where rank files are looked for: $COMPACTOR_METER_DATA, else share/compactor/meters beside the
// running program's bin/ folder (the build tree and an install both have it there), else beside
// the framework library's lib/ folder (a test linking the test kit, built in its own project).
std::string default_meter_data_dir();

// The packed form of a rank file, beside it: <rank file>.pack (see Tokenizer::pack).
std::string packed_rank_file_name(TokenizerKind kind);

class Tokenizer {
 public:
  // Maps <data_dir>/<packed_rank_file_name(kind)> when it is there and was made from the rank
  // file beside it (same size), else reads <data_dir>/<rank_file_name(kind)>; the error names the
  // file and the line.
  static Expected<std::shared_ptr<const Tokenizer>> load(TokenizerKind kind, const std::string& data_dir);
  // The packed form of a rank file (its ranks and index as they lie in memory), which load()
  // maps instead of parsing 100k–200k base64 lines; made at build time by compactor_meter_pack.
  static Expected<std::string> pack(TokenizerKind kind, const std::string& rank_file);

  TokenizerKind kind() const { return kind_; }
  std::vector<std::uint32_t> encode(std::string_view utf8) const;
  std::uint64_t count(std::string_view utf8) const;
  // The bytes of the tokens (for tests): encode then decode gives the input back (after NFKC
  // for Claude's).
  std::string decode(const std::vector<std::uint32_t>& tokens) const;

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

 private:
  struct Impl;
  explicit Tokenizer(TokenizerKind kind, std::unique_ptr<Impl> impl);
  TokenizerKind kind_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace compactor
