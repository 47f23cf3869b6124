// The mergeable ranks of a byte-level BPE vocabulary: byte string → rank, in one arena with an
// open-addressing index (a std::unordered_map of 200k std::strings costs twice the memory and a
// third more time per lookup, and lookups are most of a meter's work).
#pragma once

#include "compactor/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::detail {

class RankTable {
 public:
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;

  // A `.tiktoken` file: one "<base64 bytes> <rank>" per line.
  static Expected<RankTable> from_tiktoken(std::string_view text, const std::string& source);
  // tiktoken's "lite" form, as in claude.json's bpe_ranks: lines "<anything> <first rank>
  // <base64> <base64> …", ranks counting up from the first.
  static Expected<RankTable> from_lite(std::string_view text, const std::string& source);

  std::uint32_t rank(std::string_view bytes) const;
  std::size_t size() const { return count_; }
  // The bytes of a rank (for decoding in tests); empty when unused.
  std::string_view bytes_of(std::uint32_t rank) const;

 private:
  struct Slot {
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
    std::uint32_t rank = kNone;
  };
  bool add(std::string_view bytes, std::uint32_t rank);
  std::optional<Error> build(const std::string& source);  // the index, or "no ranks"
  void build_index();
  static std::uint64_t hash(std::string_view bytes);

  std::string arena_;
  std::vector<Slot> entries_;  // in insertion order
  std::vector<Slot> index_;    // power-of-two open addressing
  std::vector<std::uint32_t> by_rank_;  // rank → entry + 1 (0: unused)
  std::size_t count_ = 0;
};

// Standard base64 (with padding) → bytes; false on a bad character.
bool decode_base64(std::string_view in, std::string& out);

}  // namespace compactor::detail
