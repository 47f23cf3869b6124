#include "meter/pretokenizer.hpp"

#include "meter/char_classes.hpp"

#include <optional>

namespace compactor::detail {
namespace {

constexpr std::uint8_t kOtherMask = kSpace | kLetter | kNumber;  // "other" = [^\s\p{L}\p{N}]

class Splitter {
 public:
  Splitter(std::string_view text) : s_(text), table_(char_class_table()) {}

  // Class and length of the code point at `pos` (pos < size).
  std::uint8_t cls(std::size_t pos, std::uint32_t& len) const {
    auto b = static_cast<unsigned char>(s_[pos]);
    if (b < 0x80) {
      len = 1;
      return table_[b];
    }
    std::uint32_t cp;
    len = decode_utf8(s_, pos, cp);
    return table_[cp];
  }
  std::uint8_t cls(std::size_t pos) const {
    std::uint32_t len;
    return cls(pos, len);
  }
  std::size_t next(std::size_t pos) const {
    std::uint32_t len;
    cls(pos, len);
    return pos + len;
  }
  bool at_end(std::size_t pos) const { return pos >= s_.size(); }
  char byte(std::size_t pos) const { return pos < s_.size() ? s_[pos] : '\0'; }

  // The end of the run of code points from `pos` that have any bit of `mask`.
  std::size_t run(std::size_t pos, std::uint8_t mask) const {
    std::uint32_t len;
    while (pos < s_.size() && (cls(pos, len) & mask)) pos += len;
    return pos;
  }
  std::size_t run_other(std::size_t pos) const {
    std::uint32_t len;
    while (pos < s_.size() && !(cls(pos, len) & kOtherMask)) pos += len;
    return pos;
  }
  std::size_t run_bytes(std::size_t pos, std::string_view set) const {
    while (pos < s_.size() && set.find(s_[pos]) != std::string_view::npos) ++pos;
    return pos;
  }

  // 's 't 're 've 'm 'll 'd after an apostrophe at `pos`; case-insensitive as Rust's (?i) is
  // (so 's also matches U+017F ſ). Returns the end, or nullopt.
  std::optional<std::size_t> contraction(std::size_t pos, bool ignore_case) const {
    if (byte(pos) != '\'') return std::nullopt;
    auto lower = [&](std::size_t i) -> char {
      char c = byte(i);
      return ignore_case && c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
    };
    char a = lower(pos + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return pos + 2;
    if (ignore_case && byte(pos + 1) == '\xC5' && byte(pos + 2) == '\xBF') return pos + 3;  // ſ
    char b = lower(pos + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return pos + 3;
    return std::nullopt;
  }

  // \p{N}{1,3}, the first number ending at `after`.
  std::size_t numbers_up_to_3(std::size_t after) const {
    for (int n = 1; n < 3 && !at_end(after) && (cls(after) & kNumber); ++n) after = next(after);
    return after;
  }

  // ` ?[^\s\p{L}\p{N}]+[tail]*` (cl100k's tail is \r\n, o200k's \r\n/), or nullopt.
  std::optional<std::size_t> punctuation(std::size_t pos, std::string_view tail) const {
    std::size_t s = pos;
    if (byte(pos) == ' ' && !at_end(pos + 1) && !(cls(pos + 1) & kOtherMask)) s = pos + 1;
    if (cls(s) & kOtherMask) return std::nullopt;
    return run_bytes(run_other(s), tail);
  }

  // Whitespace at `pos`: the end of `\s+(?!\S)` then `\s+` (or `\s` when `single`), after any
  // rule that ends a piece at a newline. `j` is the end of the whitespace run.
  std::size_t space_tail(std::size_t pos, std::size_t j) const {
    if (at_end(j)) return j;
    // \s+(?!\S): all but the last whitespace code point, when there are two or more.
    std::size_t last = pos, p = pos;
    while (p < j) {
      last = p;
      p = next(p);
    }
    return last > pos ? last : j;
  }
  // Start of the last \r or \n in [pos, j), or npos.
  std::size_t last_newline(std::size_t pos, std::size_t j) const {
    for (std::size_t p = j; p > pos; --p)
      if (s_[p - 1] == '\n' || s_[p - 1] == '\r') return p - 1;
    return std::string_view::npos;
  }

  std::size_t cl100k(std::size_t pos) const {
    if (auto e = contraction(pos, true)) return *e;
    std::uint32_t len;
    std::uint8_t k = cls(pos, len);
    if (k & kLetter) return run(pos, kLetter);
    if (!(k & (kNewline | kNumber)) && !at_end(pos + len) && (cls(pos + len) & kLetter)) return run(pos + len, kLetter);
    if (k & kNumber) return numbers_up_to_3(pos + len);
    if (auto e = punctuation(pos, "\r\n")) return *e;
    // Whitespace: \s++$ | \s*[\r\n] | \s+(?!\S) | \s
    std::size_t j = run(pos, kSpace);
    if (at_end(j)) return j;
    if (std::size_t nl = last_newline(pos, j); nl != std::string_view::npos) return nl + 1;
    return space_tail(pos, j);
  }

  // o200k's first two alternatives from `start` (the code point after an optional prefix).
  std::optional<std::size_t> o200k_lower_word(std::size_t start) const {
    // U* W+ : U* takes all it can, then gives back until a W can follow.
    std::size_t u = start, last_w = std::string_view::npos;
    std::uint32_t len;
    while (!at_end(u)) {
      std::uint8_t k = cls(u, len);
      if (!(k & kUpperish)) break;
      if (k & kLowerish) last_w = u;
      u += len;
    }
    std::size_t w = (!at_end(u) && (cls(u) & kLowerish)) ? u : last_w;
    if (w == std::string_view::npos) return std::nullopt;
    std::size_t e = run(w, kLowerish);
    return contraction(e, true).value_or(e);
  }
  std::optional<std::size_t> o200k_upper_word(std::size_t start) const {
    std::size_t u = run(start, kUpperish);
    if (u == start) return std::nullopt;
    std::size_t e = run(u, kLowerish);
    return contraction(e, true).value_or(e);
  }

  std::size_t o200k(std::size_t pos) const {
    std::uint32_t len;
    std::uint8_t k = cls(pos, len);
    bool prefix = !(k & (kNewline | kLetter | kNumber));
    if (prefix && !at_end(pos + len))
      if (auto e = o200k_lower_word(pos + len)) return *e;
    if (auto e = o200k_lower_word(pos)) return *e;
    if (prefix && !at_end(pos + len))
      if (auto e = o200k_upper_word(pos + len)) return *e;
    if (auto e = o200k_upper_word(pos)) return *e;
    if (k & kNumber) return numbers_up_to_3(pos + len);
    if (auto e = punctuation(pos, "\r\n/")) return *e;
    // Whitespace: \s*[\r\n]+ | \s+(?!\S) | \s+
    std::size_t j = run(pos, kSpace);
    if (std::size_t nl = last_newline(pos, j); nl != std::string_view::npos) return nl + 1;
    return space_tail(pos, j);
  }

  std::size_t gpt2(std::size_t pos) const {
    if (auto e = contraction(pos, false)) return *e;
    std::size_t s = pos;
    if (byte(pos) == ' ' && !at_end(pos + 1)) s = pos + 1;
    for (std::size_t start : {s, pos}) {  // ` ?` first with the space, then without
      if (start == pos + 1 && cls(start) & kSpace) continue;
      std::uint8_t k = cls(start);
      if (k & kLetter) return run(start, kLetter);
      if (k & kNumber) return run(start, kNumber);
      if (!(k & kOtherMask)) return run_other(start);
      if (start == pos) break;
    }
    return space_tail(pos, run(pos, kSpace));
  }

 private:
  std::string_view s_;
  const std::uint8_t* table_;
};

}  // namespace

std::size_t next_piece_end(SplitPattern pattern, std::string_view text, std::size_t pos) {
  Splitter splitter(text);
  switch (pattern) {
    case SplitPattern::cl100k: return splitter.cl100k(pos);
    case SplitPattern::o200k: return splitter.o200k(pos);
    case SplitPattern::gpt2: return splitter.gpt2(pos);
  }
  return text.size();
}

std::string_view split_pattern_regex(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::cl100k:
      return R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\p{White_Space}\p{L}\p{N}]++[\r\n]*+|\p{White_Space}++$|\p{White_Space}*[\r\n]|\p{White_Space}+(?!\P{White_Space})|\p{White_Space})";
    case SplitPattern::o200k:
      return R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\p{White_Space}\p{L}\p{N}]+[\r\n/]*|\p{White_Space}*[\r\n]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+)";
    case SplitPattern::gpt2:
      return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+)";
  }
  return {};
}

}  // namespace compactor::detail
