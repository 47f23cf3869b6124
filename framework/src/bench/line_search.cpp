#include "bench/line_search.hpp"

#include <cstring>

namespace compactor::bench {

namespace {

// Polynomial hashes modulo 2^64; the filter takes a bucket from the hash's mixed high bits.
constexpr std::uint64_t kBase = 0x100000001b3ULL;
constexpr unsigned kFilterBits = 20;

std::uint64_t bucket(std::uint64_t hash) { return (hash * 0x9e3779b97f4a7c15ULL) >> (64 - kFilterBits); }

std::uint64_t window_hash(std::string_view text) {
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < LineSearch::kWindow; ++i) h = h * kBase + static_cast<unsigned char>(text[i]);
  return h;
}

}  // namespace

LineSearch::LineSearch(std::vector<std::string> lines) : lines_(std::move(lines)), filter_((std::size_t{1} << kFilterBits) / 64) {
  for (std::size_t i = 1; i < kWindow; ++i) drop_ *= kBase;
  for (std::uint32_t id = 0; id < lines_.size(); ++id) {
    if (lines_[id].size() < kWindow) continue;  // never found: the window is longer
    const std::uint64_t h = window_hash(lines_[id]);
    by_hash_[h].push_back(id);
    filter_[bucket(h) / 64] |= std::uint64_t{1} << (bucket(h) % 64);
  }
}

void LineSearch::find(std::string_view text, std::vector<std::uint32_t>& found) const {
  if (text.size() < kWindow || by_hash_.empty()) return;
  std::uint64_t h = window_hash(text);
  for (std::size_t start = 0;; ++start) {
    if (const std::uint64_t b = bucket(h); filter_[b / 64] >> (b % 64) & 1)
      if (auto it = by_hash_.find(h); it != by_hash_.end())
        for (std::uint32_t id : it->second) {
          const std::string& line = lines_[id];
          if (line.size() <= text.size() - start && std::memcmp(text.data() + start, line.data(), line.size()) == 0) found.push_back(id);
        }
    if (start + kWindow >= text.size()) break;
    h = (h - drop_ * static_cast<unsigned char>(text[start])) * kBase + static_cast<unsigned char>(text[start + kWindow]);
  }
}

}  // namespace compactor::bench
