#include "meter/rank_table.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <cstring>

namespace compactor::detail {

bool decode_base64(std::string_view in, std::string& out) {
  static const auto table = [] {
    std::array<std::int8_t, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
    return t;
  }();
  out.clear();
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    std::int8_t v = table[static_cast<unsigned char>(c)];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return true;
}

std::uint64_t RankTable::hash(std::string_view bytes) {
  // FNV-1a over 8-byte words then the tail: pieces are short, this is cheap and spreads well.
  std::uint64_t h = 1469598103934665603ULL ^ bytes.size();
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ w) * 1099511628211ULL;
    h ^= h >> 29;
  }
  for (; i < bytes.size(); ++i) h = (h ^ static_cast<unsigned char>(bytes[i])) * 1099511628211ULL;
  return h ^ (h >> 32);
}

bool RankTable::add(std::string_view bytes, std::uint32_t rank) {
  if (bytes.empty() || rank == kNone) return false;
  entries_.push_back({static_cast<std::uint32_t>(arena_.size()), static_cast<std::uint32_t>(bytes.size()), rank});
  arena_.append(bytes);
  return true;
}

std::optional<Error> RankTable::build(const std::string& source) {
  if (entries_.empty()) return Error{source + ": no ranks"};
  build_index();
  return std::nullopt;
}

void RankTable::build_index() {
  std::size_t capacity = 16;
  while (capacity < entries_.size() * 2) capacity *= 2;
  index_.assign(capacity, Slot{});
  std::uint32_t max_rank = 0;
  count_ = 0;
  for (const Slot& e : entries_) {
    std::string_view key(arena_.data() + e.offset, e.length);
    std::size_t i = hash(key) & (capacity - 1);
    bool duplicate = false;
    while (index_[i].rank != kNone) {
      if (std::string_view(arena_.data() + index_[i].offset, index_[i].length) == key) {
        duplicate = true;  // the first rank given for a byte string wins, as in tiktoken's loaders
        break;
      }
      i = (i + 1) & (capacity - 1);
    }
    if (duplicate) continue;
    index_[i] = e;
    ++count_;
    max_rank = std::max(max_rank, e.rank);
  }
  by_rank_.assign(static_cast<std::size_t>(max_rank) + 1, 0);
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (by_rank_[entries_[i].rank] == 0) by_rank_[entries_[i].rank] = static_cast<std::uint32_t>(i + 1);
}

std::uint32_t RankTable::rank(std::string_view bytes) const {
  if (index_.empty()) return kNone;
  std::size_t mask = index_.size() - 1;
  std::size_t i = hash(bytes) & mask;
  while (true) {
    const Slot& s = index_[i];
    if (s.rank == kNone) return kNone;
    if (s.length == bytes.size() && std::memcmp(arena_.data() + s.offset, bytes.data(), bytes.size()) == 0)
      return s.rank;
    i = (i + 1) & mask;
  }
}

std::string_view RankTable::bytes_of(std::uint32_t rank) const {
  if (rank >= by_rank_.size() || by_rank_[rank] == 0) return {};
  const Slot& e = entries_[by_rank_[rank] - 1];
  return std::string_view(arena_.data() + e.offset, e.length);
}

namespace {

// Calls `read(line, number)` for each non-empty line (a trailing \r dropped); the first error
// it returns ends the reading.
template <class ReadLine>
std::optional<Error> read_lines(std::string_view text, ReadLine&& read) {
  std::size_t line_no = 0;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (auto error = read(line, line_no)) return error;
  }
  return std::nullopt;
}

std::optional<std::uint32_t> parse_rank(std::string_view field) {
  std::uint32_t v = 0;
  auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc{} || p != field.data() + field.size()) return std::nullopt;
  return v;
}

}  // namespace

Expected<RankTable> RankTable::from_tiktoken(std::string_view text, const std::string& source) {
  RankTable table;
  std::string bytes;
  auto error = read_lines(text, [&](std::string_view line, std::size_t line_no) -> std::optional<Error> {
    std::size_t space = line.find(' ');
    auto rank = space == std::string_view::npos ? std::nullopt : parse_rank(line.substr(space + 1));
    if (!rank || !decode_base64(line.substr(0, space), bytes) || !table.add(bytes, *rank))
      return Error{source + ":" + std::to_string(line_no) + ": expected \"<base64> <rank>\""};
    return std::nullopt;
  });
  if (!error) error = table.build(source);
  if (error) return *error;
  return table;
}

Expected<RankTable> RankTable::from_lite(std::string_view text, const std::string& source) {
  RankTable table;
  std::string bytes;
  auto error = read_lines(text, [&](std::string_view line, std::size_t line_no) -> std::optional<Error> {
    auto where = [&] { return source + ": bpe_ranks line " + std::to_string(line_no); };
    std::size_t a = line.find(' ');
    std::size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    if (b == std::string_view::npos) return Error{where() + ": expected \"<key> <first rank> <base64>…\""};
    auto first = parse_rank(line.substr(a + 1, b - a - 1));
    if (!first) return Error{where() + ": the first rank is not a number"};
    std::uint32_t rank = *first;
    std::string_view rest = line.substr(b + 1);
    while (!rest.empty()) {
      std::size_t sp = rest.find(' ');
      std::string_view token = rest.substr(0, sp);
      rest.remove_prefix(sp == std::string_view::npos ? rest.size() : sp + 1);
      if (token.empty()) continue;
      if (!decode_base64(token, bytes) || !table.add(bytes, rank))
        return Error{where() + ": \"" + std::string(token) + "\" is not base64 of a token"};
      ++rank;
    }
    return std::nullopt;
  });
  if (!error) error = table.build(source);
  if (error) return *error;
  return table;
}

}  // namespace compactor::detail
