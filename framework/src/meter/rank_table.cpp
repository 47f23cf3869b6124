#include "meter/rank_table.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <optional>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
  Storage& st = *storage_;
  st.entries.push_back({static_cast<std::uint32_t>(st.arena.size()), static_cast<std::uint32_t>(bytes.size()), rank});
  st.arena.append(bytes);
  return true;
}

std::optional<Error> RankTable::build(const std::string& source) {
  if (storage_->entries.empty()) return Error{source + ": no ranks"};
  build_index();
  return std::nullopt;
}

void RankTable::build_index() {
  Storage& st = *storage_;
  std::size_t capacity = 16;
  while (capacity < st.entries.size() * 2) capacity *= 2;
  st.index.assign(capacity, Slot{});
  std::uint32_t max_rank = 0;
  count_ = 0;
  for (const Slot& e : st.entries) {
    std::string_view key(st.arena.data() + e.offset, e.length);
    std::size_t i = hash(key) & (capacity - 1);
    bool duplicate = false;
    while (st.index[i].rank != kNone) {
      if (std::string_view(st.arena.data() + st.index[i].offset, st.index[i].length) == key) {
        duplicate = true;  // the first rank given for a byte string wins, as in tiktoken's loaders
        break;
      }
      i = (i + 1) & (capacity - 1);
    }
    if (duplicate) continue;
    st.index[i] = e;
    ++count_;
    max_rank = std::max(max_rank, e.rank);
  }
  st.by_rank.assign(static_cast<std::size_t>(max_rank) + 1, 0);
  for (std::size_t i = 0; i < st.entries.size(); ++i)
    if (st.by_rank[st.entries[i].rank] == 0) st.by_rank[st.entries[i].rank] = static_cast<std::uint32_t>(i + 1);
  arena_ = st.arena.data();
  arena_size_ = st.arena.size();
  entries_ = st.entries.data();
  entries_size_ = st.entries.size();
  index_ = st.index.data();
  index_size_ = st.index.size();
  by_rank_ = st.by_rank.data();
  by_rank_size_ = st.by_rank.size();
  owner_ = storage_;
}

namespace {

// The packed file: this header, then the index, the entries, by_rank, the arena and the extra
// bytes, each starting at a multiple of 8. Native byte order: a pack is made where it is used.
struct PackHeader {
  char magic[8];
  std::uint64_t source_size, count, index, entries, by_rank, arena, extra;
};
constexpr char kPackMagic[8] = {'C', 'M', 'P', 'R', 'A', 'N', 'K', '1'};
std::size_t padded(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

}  // namespace

std::string RankTable::packed(std::string_view extra, std::uint64_t source_size) const {
  PackHeader h{};
  std::memcpy(h.magic, kPackMagic, sizeof h.magic);
  h.source_size = source_size;
  h.count = count_;
  h.index = index_size_;
  h.entries = entries_size_;
  h.by_rank = by_rank_size_;
  h.arena = arena_size_;
  h.extra = extra.size();
  std::string out;
  auto put = [&](const void* data, std::size_t n) {
    out.append(static_cast<const char*>(data), n);
    out.resize(padded(out.size()), '\0');
  };
  put(&h, sizeof h);
  put(index_, index_size_ * sizeof(Slot));
  put(entries_, entries_size_ * sizeof(Slot));
  put(by_rank_, by_rank_size_ * sizeof(std::uint32_t));
  put(arena_, arena_size_);
  put(extra.data(), extra.size());
  return out;
}

Expected<RankTable> RankTable::from_packed(const std::string& path, std::string& extra, std::uint64_t& source_size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{path + ": cannot read: " + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) < sizeof(PackHeader)) {
    ::close(fd);
    return Error{path + ": not a packed rank table"};
  }
  std::size_t size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return Error{path + ": cannot map: " + std::strerror(errno)};
  std::shared_ptr<const void> owner(map, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  const char* base = static_cast<const char*>(map);
  PackHeader h{};
  std::memcpy(&h, base, sizeof h);
  // Every section must lie inside the file, and the index must be a power of two.
  std::size_t at = padded(sizeof h);
  auto section = [&](std::uint64_t count, std::size_t unit) -> const char* {
    if (count > size / unit || at > size || count * unit > size - at) return nullptr;
    const char* p = base + at;
    at = padded(at + count * unit);
    return p;
  };
  const char* index = section(h.index, sizeof(Slot));
  const char* entries = index ? section(h.entries, sizeof(Slot)) : nullptr;
  const char* by_rank = entries ? section(h.by_rank, sizeof(std::uint32_t)) : nullptr;
  const char* arena = by_rank ? section(h.arena, 1) : nullptr;
  const char* tail = arena ? section(h.extra, 1) : nullptr;
  if (std::memcmp(h.magic, kPackMagic, sizeof h.magic) != 0 || tail == nullptr || h.index < 16 ||
      (h.index & (h.index - 1)) != 0 || h.count == 0 || h.count > h.entries)
    return Error{path + ": not a packed rank table"};
  // Every slot inside the arena: a damaged pack is refused, never read out of bounds.
  auto inside = [&](const char* slots, std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
      Slot s;
      std::memcpy(&s, slots + i * sizeof(Slot), sizeof s);
      if (s.rank != kNone && (s.offset > h.arena || s.length > h.arena - s.offset)) return false;
    }
    return true;
  };
  if (!inside(index, h.index) || !inside(entries, h.entries)) return Error{path + ": not a packed rank table"};
  RankTable table;
  table.storage_.reset();
  table.owner_ = std::move(owner);
  table.index_ = reinterpret_cast<const Slot*>(index);
  table.index_size_ = h.index;
  table.entries_ = reinterpret_cast<const Slot*>(entries);
  table.entries_size_ = h.entries;
  table.by_rank_ = reinterpret_cast<const std::uint32_t*>(by_rank);
  table.by_rank_size_ = h.by_rank;
  table.arena_ = arena;
  table.arena_size_ = h.arena;
  table.count_ = h.count;
  extra.assign(tail, h.extra);
  source_size = h.source_size;
  return table;
}

std::uint32_t RankTable::rank(std::string_view bytes) const {
  if (index_size_ == 0) return kNone;
  std::size_t mask = index_size_ - 1;
  std::size_t i = hash(bytes) & mask;
  while (true) {
    const Slot& s = index_[i];
    if (s.rank == kNone) return kNone;
    if (s.length == bytes.size() && std::memcmp(arena_ + s.offset, bytes.data(), bytes.size()) == 0)
      return s.rank;
    i = (i + 1) & mask;
  }
}

std::string_view RankTable::bytes_of(std::uint32_t rank) const {
  if (rank >= by_rank_size_ || by_rank_[rank] == 0 || by_rank_[rank] > entries_size_) return {};
  const Slot& e = entries_[by_rank_[rank] - 1];
  if (e.offset > arena_size_ || e.length > arena_size_ - e.offset) return {};
  return std::string_view(arena_ + e.offset, e.length);
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
