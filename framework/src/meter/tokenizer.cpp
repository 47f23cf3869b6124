#include "meter/tokenizer.hpp"

#include "meter/icu_on_demand.hpp"
#include "meter/pretokenizer.hpp"
#include "meter/rank_table.hpp"

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <queue>
#include <sstream>
#include <vector>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compactor {

std::string_view to_string(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::cl100k_base: return "cl100k_base";
    case TokenizerKind::o200k_base: return "o200k_base";
    case TokenizerKind::claude_legacy: return "claude-legacy";
    case TokenizerKind::r50k_base: return "r50k_base";
    case TokenizerKind::p50k_base: return "p50k_base";
  }
  return "?";
}

std::string_view rank_file_name(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::cl100k_base: return "cl100k_base.tiktoken";
    case TokenizerKind::o200k_base: return "o200k_base.tiktoken";
    case TokenizerKind::claude_legacy: return "claude.json";
    case TokenizerKind::r50k_base: return "r50k_base.tiktoken";
    case TokenizerKind::p50k_base: return "p50k_base.tiktoken";
  }
  return "?";
}

std::string default_meter_data_dir() {
  if (const char* env = std::getenv("COMPACTOR_METER_DATA"); env != nullptr && *env != '\0') return env;
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  boost::dll::fs::error_code ec;
  if (auto program = boost::dll::program_location(ec); !ec) candidates.push_back(fs::path(program.string()).parent_path().parent_path());
  // Beside the framework library this code is in (build/lib → build, PREFIX/lib or a multiarch
  // PREFIX/lib/<triplet> → PREFIX): a team's test, built elsewhere, counts with the meters of the
  // tree or prefix it links, as that tree's CLI does.
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&default_meter_data_dir), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code lib_ec;
    const fs::path lib = fs::canonical(info.dli_fname, lib_ec).parent_path();
    if (!lib_ec) candidates.insert(candidates.end(), {lib.parent_path(), lib.parent_path().parent_path()});
  }
  for (const fs::path& prefix : candidates) {
    const fs::path dir = prefix / "share" / "compactor" / "meters";
    std::error_code dir_ec;
    if (fs::is_directory(dir, dir_ec)) return dir.string();
  }
  return candidates.empty() ? "share/compactor/meters" : (candidates.front() / "share" / "compactor" / "meters").string();
}

namespace {

using detail::RankTable;
using detail::SplitPattern;

struct SpecialToken {
  std::string text;
  std::uint32_t rank;
};

// Pieces up to this many bytes merge with tiktoken's quadratic scan (fastest for short pieces);
// longer ones with a heap, so a 1 MB run of base64 does not take minutes.
constexpr std::size_t kQuadraticMergeLimit = 96;

}  // namespace

struct Tokenizer::Impl {
  static inline std::atomic<std::uint64_t> next_id{1};
  const std::uint64_t id = next_id++;
  RankTable ranks;
  SplitPattern pattern = SplitPattern::cl100k;
  bool nfkc = false;
  std::vector<SpecialToken> specials;  // recognised in the text (Claude's "all")

  template <class Emit>
  void encode_piece(std::string_view piece, Emit&& emit) const {
    if (std::uint32_t r = ranks.rank(piece); r != RankTable::kNone)
      emit(r);
    else
      merge(piece, emit);
  }

  // The tokens of a piece that is not one token itself.
  template <class Emit>
  void merge(std::string_view piece, Emit& emit) const {
    if (piece.size() <= kQuadraticMergeLimit)
      merge_quadratic(piece, emit);
    else
      merge_heap(piece, emit);
  }

  template <class Emit>
  void merge_quadratic(std::string_view piece, Emit& emit) const {
    // tiktoken's byte_pair_merge: parts[i] = (start, rank of merging part i with part i+1).
    struct Part {
      std::size_t start;
      std::uint32_t rank;
    };
    Part parts[kQuadraticMergeLimit + 1];
    std::size_t n = piece.size() + 1;
    for (std::size_t i = 0; i + 1 < piece.size(); ++i) parts[i] = {i, ranks.rank(piece.substr(i, 2))};
    parts[piece.size() - 1] = {piece.size() - 1, RankTable::kNone};
    parts[piece.size()] = {piece.size(), RankTable::kNone};
    auto rank_at = [&](std::size_t i) {
      return i + 3 < n ? ranks.rank(piece.substr(parts[i].start, parts[i + 3].start - parts[i].start)) : RankTable::kNone;
    };
    while (true) {
      std::uint32_t best = RankTable::kNone;
      std::size_t at = 0;
      for (std::size_t i = 0; i + 1 < n; ++i)
        if (parts[i].rank < best) {
          best = parts[i].rank;
          at = i;
        }
      if (best == RankTable::kNone) break;
      if (at > 0) parts[at - 1].rank = rank_at(at - 1);
      parts[at].rank = rank_at(at);
      std::copy(parts + at + 2, parts + n, parts + at + 1);
      --n;
    }
    for (std::size_t i = 0; i + 1 < n; ++i) emit(piece_rank(piece.substr(parts[i].start, parts[i + 1].start - parts[i].start)));
  }

  template <class Emit>
  void merge_heap(std::string_view piece, Emit& emit) const {
    // The same merges in the same order (lowest rank first, leftmost on ties) over a linked
    // list, with stale heap entries recognised by a per-part version.
    std::size_t n = piece.size();
    std::vector<std::size_t> next(n), prev(n);
    std::vector<std::uint32_t> version(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      next[i] = i + 1;
      prev[i] = i == 0 ? SIZE_MAX : i - 1;
    }
    struct Entry {
      std::uint32_t rank;
      std::size_t start;
      std::uint32_t version;
      bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : start > o.start; }
    };
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
    auto pair_rank = [&](std::size_t i) {
      std::size_t j = next[i];
      if (j >= n) return RankTable::kNone;
      std::size_t end = next[j];
      return ranks.rank(piece.substr(i, end - i));
    };
    auto push = [&](std::size_t i) {
      std::uint32_t r = pair_rank(i);
      ++version[i];
      if (r != RankTable::kNone) heap.push({r, i, version[i]});
    };
    for (std::size_t i = 0; i + 1 < n; ++i) push(i);
    while (!heap.empty()) {
      Entry e = heap.top();
      heap.pop();
      if (e.version != version[e.start]) continue;
      std::size_t i = e.start, j = next[i];
      next[i] = next[j];
      if (next[j] < n) prev[next[j]] = i;
      version[j] = UINT32_MAX;  // gone
      push(i);
      if (prev[i] != SIZE_MAX) push(prev[i]);
    }
    for (std::size_t i = 0; i < n; i = next[i]) emit(piece_rank(piece.substr(i, next[i] - i)));
  }

  std::uint32_t piece_rank(std::string_view bytes) const {
    std::uint32_t r = ranks.rank(bytes);
    return r == RankTable::kNone ? 0 : r;  // every single byte has a rank in these vocabularies
  }

  // Tokens of one piece, remembered per thread for pieces that needed merging: real text repeats
  // its words, and a merge costs tens of rank lookups where the cache costs one compare.
  std::uint64_t count_piece(std::string_view piece) const {
    if (ranks.rank(piece) != RankTable::kNone) return 1;
    struct Entry {
      std::uint64_t owner = 0;  // Impl::id: an address could be reused by a later tokenizer
      std::uint8_t length = 0;
      char bytes[31];
      std::uint32_t count = 0;
    };
    constexpr std::size_t kEntries = 4096;
    thread_local std::unique_ptr<Entry[]> cache = std::make_unique<Entry[]>(kEntries);
    Entry* e = nullptr;
    if (piece.size() <= sizeof(Entry::bytes)) {
      std::uint64_t h = 1469598103934665603ULL;
      for (char c : piece) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
      e = &cache[(h ^ (h >> 29)) & (kEntries - 1)];
      if (e->owner == id && e->length == piece.size() && std::memcmp(e->bytes, piece.data(), piece.size()) == 0)
        return e->count;
    }
    std::uint32_t n = 0;
    auto counter = [&](std::uint32_t) { ++n; };
    merge(piece, counter);
    if (e != nullptr) {
      e->owner = id;
      e->length = static_cast<std::uint8_t>(piece.size());
      std::memcpy(e->bytes, piece.data(), piece.size());
      e->count = n;
    }
    return n;
  }

  // Splits `text` and hands each piece to `on_piece`.
  template <class OnPiece>
  void split(std::string_view text, OnPiece& on_piece) const {
    for (std::size_t pos = 0; pos < text.size();) {
      std::size_t end = detail::next_piece_end(pattern, text, pos);
      on_piece(text.substr(pos, end - pos));
      pos = end;
    }
  }

  // NFKC (Claude's), special tokens (to `emit`), and the ordinary text between them, piece by
  // piece (to `on_piece`).
  template <class Emit, class OnPiece>
  void encode(std::string_view text, Emit&& emit, OnPiece&& on_piece) const {
    std::string normalized;
    if (nfkc && detail::nfkc_normalize(text, normalized)) text = normalized;
    if (specials.empty()) return split(text, on_piece);
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t found = std::string_view::npos;
      const SpecialToken* which = nullptr;
      for (std::size_t lt = text.find('<', pos); lt != std::string_view::npos && which == nullptr; lt = text.find('<', lt + 1))
        for (const SpecialToken& s : specials)
          if (text.substr(lt, s.text.size()) == s.text) {
            found = lt;
            which = &s;
            break;
          }
      split(text.substr(pos, found == std::string_view::npos ? std::string_view::npos : found - pos), on_piece);
      if (which == nullptr) break;
      emit(which->rank);
      pos = found + which->text.size();
    }
  }
};

Tokenizer::Tokenizer(TokenizerKind kind, std::unique_ptr<Impl> impl) : kind_(kind), impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

namespace {

// Templates over the implementation type, which is private to Tokenizer.
// Claude's legacy tokenizer normalizes text to NFKC first (its countTokens does), and so needs ICU.
bool normalizes_to_nfkc(TokenizerKind kind) { return kind == TokenizerKind::claude_legacy; }

template <class ImplT>
void configure(TokenizerKind kind, ImplT& impl) {
  impl.pattern = kind == TokenizerKind::cl100k_base ? SplitPattern::cl100k
                 : kind == TokenizerKind::o200k_base ? SplitPattern::o200k
                                                     : SplitPattern::gpt2;
  impl.nfkc = normalizes_to_nfkc(kind);
  // Longest first, so that a special token that begins another is not taken for it.
  std::sort(impl.specials.begin(), impl.specials.end(),
            [](const SpecialToken& a, const SpecialToken& b) { return a.text.size() > b.text.size(); });
}

std::string cannot_read(TokenizerKind kind, const std::string& path) {
  return path + ": cannot read the " + std::string(to_string(kind)) +
         " rank file (run tools/setup.sh, or set COMPACTOR_METER_DATA to the folder that has it)";
}

// The rank file itself, parsed: what the pack is made from, and the fallback without a pack.
template <class ImplT>
Expected<std::unique_ptr<ImplT>> load_text(TokenizerKind kind, const std::string& path, std::uint64_t& size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{cannot_read(kind, path)};
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  size = text.size();

  auto impl = std::make_unique<ImplT>();
  if (kind == TokenizerKind::claude_legacy) {
    boost::system::error_code ec;
    boost::json::value doc = boost::json::parse(text, ec);
    const boost::json::object* root = ec ? nullptr : doc.if_object();
    const boost::json::string* ranks = root && root->contains("bpe_ranks") ? root->at("bpe_ranks").if_string() : nullptr;
    if (ranks == nullptr) return Error{path + ": expected a JSON object with a \"bpe_ranks\" string"};
    auto table = RankTable::from_lite(*ranks, path);
    if (!table) return table.error();
    impl->ranks = std::move(*table);
    if (const auto* specials = root->contains("special_tokens") ? root->at("special_tokens").if_object() : nullptr)
      for (const auto& [name, id] : *specials)
        if (id.is_int64()) impl->specials.push_back({std::string(name), static_cast<std::uint32_t>(id.as_int64())});
  } else {
    auto table = RankTable::from_tiktoken(text, path);
    if (!table) return table.error();
    impl->ranks = std::move(*table);
  }
  configure(kind, *impl);
  return impl;
}

// Special tokens in a pack's extra bytes: "<text>\0<rank>\0" each.
std::string specials_bytes(const std::vector<SpecialToken>& specials) {
  std::string out;
  for (const auto& s : specials) {
    out += s.text;
    out += '\0';
    out += std::to_string(s.rank);
    out += '\0';
  }
  return out;
}

bool read_specials(std::string_view bytes, std::vector<SpecialToken>& out) {
  while (!bytes.empty()) {
    std::size_t a = bytes.find('\0');
    std::size_t b = a == std::string_view::npos ? a : bytes.find('\0', a + 1);
    if (b == std::string_view::npos) return false;
    std::uint32_t rank = 0;
    std::string_view digits = bytes.substr(a + 1, b - a - 1);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
    if (ec != std::errc{} || p != digits.data() + digits.size()) return false;
    out.push_back({std::string(bytes.substr(0, a)), rank});
    bytes.remove_prefix(b + 1);
  }
  return true;
}

}  // namespace

std::string packed_rank_file_name(TokenizerKind kind) { return std::string(rank_file_name(kind)) + ".pack"; }

Expected<std::shared_ptr<const Tokenizer>> Tokenizer::load(TokenizerKind kind, const std::string& data_dir) {
  std::string no_icu;
  if (normalizes_to_nfkc(kind) && detail::icu_functions(&no_icu) == nullptr)
    return Error{"token meter " + std::string(rank_file_name(kind)) + ": NFKC needs ICU: " + no_icu};
  std::string path = data_dir + "/" + std::string(rank_file_name(kind));
  // The pack made at build time, when it was made from this very rank file (same size) or the
  // rank file is not there: mapped, not parsed.
  std::string pack = data_dir + "/" + packed_rank_file_name(kind);
  struct stat text_stat {};
  bool has_text = ::stat(path.c_str(), &text_stat) == 0;
  if (::access(pack.c_str(), R_OK) == 0) {
    std::string extra;
    std::uint64_t source_size = 0;
    auto table = RankTable::from_packed(pack, extra, source_size);
    auto impl = std::make_unique<Impl>();
    if (table && (!has_text || static_cast<std::uint64_t>(text_stat.st_size) == source_size) &&
        read_specials(extra, impl->specials)) {
      impl->ranks = std::move(*table);
      configure(kind, *impl);
      return std::shared_ptr<const Tokenizer>(new Tokenizer(kind, std::move(impl)));
    }
  }
  std::uint64_t size = 0;
  auto impl = load_text<Impl>(kind, path, size);
  if (!impl) return impl.error();
  return std::shared_ptr<const Tokenizer>(new Tokenizer(kind, std::move(*impl)));
}

Expected<std::string> Tokenizer::pack(TokenizerKind kind, const std::string& rank_file) {
  std::uint64_t size = 0;
  auto impl = load_text<Impl>(kind, rank_file, size);
  if (!impl) return impl.error();
  return (*impl)->ranks.packed(specials_bytes((*impl)->specials), size);
}

std::vector<std::uint32_t> Tokenizer::encode(std::string_view utf8) const {
  std::vector<std::uint32_t> out;
  auto emit = [&](std::uint32_t r) { out.push_back(r); };
  impl_->encode(utf8, emit, [&](std::string_view piece) { impl_->encode_piece(piece, emit); });
  return out;
}

std::uint64_t Tokenizer::count(std::string_view utf8) const {
  std::uint64_t n = 0;
  impl_->encode(utf8, [&](std::uint32_t) { ++n; }, [&](std::string_view piece) { n += impl_->count_piece(piece); });
  return n;
}

std::string Tokenizer::decode(const std::vector<std::uint32_t>& tokens) const {
  std::string out;
  for (std::uint32_t t : tokens) {
    auto bytes = impl_->ranks.bytes_of(t);
    if (bytes.empty())
      for (const SpecialToken& s : impl_->specials)
        if (s.rank == t) bytes = s.text;
    out.append(bytes);
  }
  return out;
}

}  // namespace compactor
