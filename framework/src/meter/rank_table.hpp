// The mergeable ranks of a byte-level BPE vocabulary: byte string → rank, in one arena with an
// open-addressing index (a std::unordered_map of 200k std::strings costs twice the memory and a
// third more time per lookup, and lookups are most of a meter's work).
#pragma once

#include "compactor/error.hpp"

#include <cstdint>
#include <memory>
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

  // The packed form: the index, entries, ranks and arena as they lie in memory, plus
  // `extra` bytes the loader keeps beside them (Claude's special tokens). Made at build time
  // (compactor_meter_pack); from_packed maps the file and uses it in place, so loading costs a
  // few page faults instead of decoding 100k–200k base64 lines. `source_size` is the size of the
  // rank file it was made from: a pack whose rank file has another size is stale.
  std::string packed(std::string_view extra, std::uint64_t source_size) const;
  static Expected<RankTable> from_packed(const std::string& path, std::string& extra, std::uint64_t& source_size);

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
  // What a table built from text owns; a packed table owns its mapping instead.
  struct Storage {
    std::string arena;
    std::vector<Slot> entries;            // in insertion order
    std::vector<Slot> index;              // power-of-two open addressing
    std::vector<std::uint32_t> by_rank;   // rank → entry + 1 (0: unused)
  };
  bool add(std::string_view bytes, std::uint32_t rank);
  std::optional<Error> build(const std::string& source);  // the index, or "no ranks"
  void build_index();
  static std::uint64_t hash(std::string_view bytes);

  std::shared_ptr<Storage> storage_ = std::make_shared<Storage>();
  std::shared_ptr<const void> owner_;  // keeps the views below alive (storage_ or a mapping)
  const char* arena_ = nullptr;
  const Slot* entries_ = nullptr;
  const Slot* index_ = nullptr;
  const std::uint32_t* by_rank_ = nullptr;
  std::size_t entries_size_ = 0, index_size_ = 0, by_rank_size_ = 0, arena_size_ = 0;
  std::size_t count_ = 0;
};

// Standard base64 (with padding) → bytes; false on a bad character.
bool decode_base64(std::string_view in, std::string& out);

}  // namespace compactor::detail
