// Splits text into the pieces byte-pair encoding runs on, exactly as the published split
// patterns do, without a regex engine: ICU's regex runs these patterns at 16–36 MB/s, this at
// several times that. Each function answers "where does the piece starting at `pos` end?" by
// taking the patterns' alternatives in order, with the same greedy and backtracking choices a
// regex engine makes. The ICU regex of each pattern is the oracle in tests/unit/meter.
#pragma once

#include <cstddef>
#include <string_view>

namespace compactor::detail {

enum class SplitPattern {
  // cl100k_base, as tiktoken has it today (possessive form, `\s++$` and `\s*[\r\n]`):
  // '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
  cl100k,
  // o200k_base:
  // [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
  // |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
  // |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
  o200k,
  // GPT-2's, which Claude's legacy tokenizer uses:
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  gpt2,
};

// The end of the piece that starts at `pos` (< text.size()); always > pos.
std::size_t next_piece_end(SplitPattern pattern, std::string_view text, std::size_t pos);

// The pattern as a regular expression, for the ICU oracle (`\s` spelled as \p{White_Space}).
std::string_view split_pattern_regex(SplitPattern pattern);

}  // namespace compactor::detail
