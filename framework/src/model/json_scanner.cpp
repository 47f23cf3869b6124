#include "model/json_scanner.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_stack.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <deque>
#include <utility>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace compactor::detail {
namespace {

// Bytes a string body can hold without a second look: printable ASCII but '"' and '\\'.
constexpr std::array<bool, 256> make_plain_table() {
  std::array<bool, 256> table{};
  for (int c = 0x20; c < 0x80; ++c) table[c] = true;
  table['"'] = false;
  table['\\'] = false;
  return table;
}
constexpr std::array<bool, 256> kPlain = make_plain_table();

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The four hex digits of a \u escape at text[at], into `out`; false when they are not.
bool read_hex4(std::string_view text, std::size_t at, unsigned& out) {
  if (at + 4 > text.size()) return false;
  out = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    int h = hex_value(text[at + i]);
    if (h < 0) return false;
    out = out * 16 + static_cast<unsigned>(h);
  }
  return true;
}

// Length of the valid UTF-8 sequence at text[pos] (pos holds a byte >= 0x80), or 0.
std::size_t utf8_sequence(std::string_view text, std::size_t pos) {
  auto byte = [&](std::size_t i) -> unsigned { return i < text.size() ? static_cast<unsigned char>(text[i]) : 0u; };
  auto cont = [&](std::size_t i) { unsigned b = byte(i); return b >= 0x80 && b <= 0xBF; };
  unsigned b0 = byte(pos);
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(pos + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    unsigned b1 = byte(pos + 1);
    unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    return (b1 >= lo && b1 <= hi && cont(pos + 2)) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    unsigned b1 = byte(pos + 1);
    unsigned lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return (b1 >= lo && b1 <= hi && cont(pos + 2) && cont(pos + 3)) ? 4 : 0;
  }
  return 0;
}

struct KeyRef {
  std::string_view raw;
  std::size_t offset;
};

bool keys_equal(std::string_view a, std::string_view b) {
  bool escaped = a.find('\\') != std::string_view::npos || b.find('\\') != std::string_view::npos;
  if (!escaped) return a == b;
  return unescape_json_string(a) == unescape_json_string(b);
}

// The offset of a repeated key, or npos.
std::size_t find_duplicate_key(std::vector<KeyRef>& keys) {
  if (keys.size() < 2) return std::string_view::npos;
  if (keys.size() <= 16) {
    for (std::size_t i = 1; i < keys.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (keys_equal(keys[i].raw, keys[j].raw)) return keys[i].offset;
    return std::string_view::npos;
  }
  std::vector<std::pair<std::string, std::size_t>> decoded;
  decoded.reserve(keys.size());
  for (const auto& k : keys) decoded.emplace_back(unescape_json_string(k.raw), k.offset);
  std::sort(decoded.begin(), decoded.end());
  std::size_t found = std::string_view::npos;
  for (std::size_t i = 1; i < decoded.size(); ++i)
    if (decoded[i].first == decoded[i - 1].first) found = std::min(found, decoded[i].second);
  return found;
}

// A code point as UTF-8 (the caller has checked it is one).
void append_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::size_t JsonScanner::skip_whitespace(std::size_t pos) const {
  while (pos < text_.size() && is_ws(text_[pos])) ++pos;
  return pos;
}

bool JsonScanner::fail(std::size_t offset, std::string what) {
  error_.offset = offset;
  error_.what = std::move(what);
  return false;
}

bool JsonScanner::scan_document(std::size_t pos, ScannedDocument& doc) {
  pos_ = skip_whitespace(pos);
  if (pos_ >= text_.size()) return fail(pos_, "expected a JSON value, found end of input");
  doc.kind = text_[pos_];
  doc.span.begin = pos_;
  if (!value(1, &doc)) return false;
  doc.span.end = pos_;
  return true;
}

bool JsonScanner::value(unsigned depth, ScannedDocument* top) {
  if (pos_ >= text_.size()) return fail(pos_, "expected a value, found end of input");
  char c = text_[pos_];
  switch (c) {
    case '{':
      if (depth > max_depth_) return fail(pos_, "nesting deeper than the limit of " + std::to_string(max_depth_));
      return object(depth, top);
    case '[':
      if (depth > max_depth_) return fail(pos_, "nesting deeper than the limit of " + std::to_string(max_depth_));
      return array(depth, top != nullptr ? &top->elements : nullptr);
    case '"': return string(nullptr);
    case 't': return literal("true");
    case 'f': return literal("false");
    case 'n': return literal("null");
    default:
      if (c == '-' || is_digit(c)) return number();
      if (static_cast<unsigned char>(c) >= 0x80)
        return fail(pos_, "unexpected non-ASCII byte outside a string");
      return fail(pos_, std::string("unexpected character '") + c + "'");
  }
}

bool JsonScanner::object(unsigned depth, ScannedDocument* top) {
  std::size_t open = pos_;
  ++pos_;  // '{'
  std::vector<KeyRef> keys;
  ws();
  if (pos_ < text_.size() && text_[pos_] == '}') {
    ++pos_;
    return true;
  }
  for (;;) {
    ws();
    if (pos_ >= text_.size()) return fail(pos_, "unterminated object (opened at byte " + std::to_string(open) + ")");
    if (text_[pos_] != '"') return fail(pos_, "expected a string key in object");
    std::size_t key_offset = pos_;
    std::string_view key;
    if (!string(&key)) return false;
    keys.push_back({key, key_offset});
    ws();
    if (pos_ >= text_.size() || text_[pos_] != ':') return fail(pos_, "expected ':' after an object key");
    ++pos_;
    ws();
    std::size_t value_begin = pos_;
    if (top != nullptr && key == "messages" && pos_ < text_.size() && text_[pos_] == '[') {
      if (depth + 1 > max_depth_) return fail(pos_, "nesting deeper than the limit of " + std::to_string(max_depth_));
      top->has_messages_array = true;
      top->messages_elements.clear();
      if (!array(depth + 1, &top->messages_elements)) return false;
    } else if (!value(depth + 1, nullptr)) {
      return false;
    }
    if (top != nullptr) top->members.push_back({key, {value_begin, pos_}});
    ws();
    if (pos_ >= text_.size()) return fail(pos_, "unterminated object (opened at byte " + std::to_string(open) + ")");
    if (text_[pos_] == ',') {
      ++pos_;
      continue;
    }
    if (text_[pos_] == '}') {
      ++pos_;
      break;
    }
    return fail(pos_, "expected ',' or '}' in object");
  }
  std::size_t duplicate = find_duplicate_key(keys);
  if (duplicate != std::string_view::npos) {
    std::string_view raw;
    for (const auto& k : keys)
      if (k.offset == duplicate) raw = k.raw;
    return fail(duplicate, "duplicate object key \"" + unescape_json_string(raw) + "\"");
  }
  return true;
}

bool JsonScanner::array(unsigned depth, std::vector<JsonSpan>* elements) {
  std::size_t open = pos_;
  ++pos_;  // '['
  ws();
  if (pos_ < text_.size() && text_[pos_] == ']') {
    ++pos_;
    return true;
  }
  for (;;) {
    ws();
    std::size_t begin = pos_, end = 0;
    if (elements != nullptr && element_parser_ != nullptr && pos_ < text_.size() &&
        element_parser_->parse_element(begin, depth + 1, end))
      pos_ = end;
    else if (!value(depth + 1, nullptr))
      return false;
    if (elements != nullptr) elements->push_back({begin, pos_});
    ws();
    if (pos_ >= text_.size()) return fail(pos_, "unterminated array (opened at byte " + std::to_string(open) + ")");
    if (text_[pos_] == ',') {
      ++pos_;
      continue;
    }
    if (text_[pos_] == ']') {
      ++pos_;
      return true;
    }
    return fail(pos_, "expected ',' or ']' in array");
  }
}

bool JsonScanner::string(std::string_view* raw) {
  std::size_t open = pos_;
  ++pos_;  // '"'
  const std::size_t n = text_.size();
  const char* data = text_.data();
  for (;;) {
    // Skip plain bytes eight at a time: stop at a word holding '"', '\\', a control byte or a
    // non-ASCII byte, then finish byte by byte.
    constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
    while (pos_ + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, data + pos_, 8);
      auto has_zero = [&](std::uint64_t v) { return (v - kOnes) & ~v & kHigh; };
      std::uint64_t special = has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\')) |
                              ((w - kOnes * 0x20) & ~w & kHigh) | (w & kHigh);
      if (special != 0) break;
      pos_ += 8;
    }
    while (pos_ < n && kPlain[static_cast<unsigned char>(data[pos_])]) ++pos_;
    if (pos_ >= n) return fail(open, "unterminated string");
    unsigned char c = static_cast<unsigned char>(data[pos_]);
    if (c == '"') {
      if (raw != nullptr) *raw = text_.substr(open + 1, pos_ - open - 1);
      ++pos_;
      return true;
    }
    if (c == '\\') {
      if (pos_ + 1 >= n) return fail(open, "unterminated string");
      char e = data[pos_ + 1];
      if (e == 'u') {
        auto read_hex = [&](std::size_t at, unsigned& out) { return read_hex4({data, n}, at, out); };
        unsigned cp = 0;
        if (!read_hex(pos_ + 2, cp)) return fail(pos_, "invalid \\u escape: expected four hex digits");
        if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(pos_, "invalid \\u escape: lone low surrogate");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          unsigned low = 0;
          if (pos_ + 7 >= n || data[pos_ + 6] != '\\' || data[pos_ + 7] != 'u' || !read_hex(pos_ + 8, low) ||
              low < 0xDC00 || low > 0xDFFF)
            return fail(pos_, "invalid \\u escape: high surrogate without a low surrogate");
          pos_ += 12;
        } else {
          pos_ += 6;
        }
        continue;
      }
      if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
        pos_ += 2;
        continue;
      }
      return fail(pos_, "invalid escape sequence in string");
    }
    if (c < 0x20) return fail(pos_, "unescaped control character in string");
    std::size_t len = utf8_sequence(text_, pos_);
    if (len == 0) return fail(pos_, "invalid UTF-8 byte in string");
    pos_ += len;
  }
}

bool JsonScanner::number() {
  std::size_t begin = pos_;
  const std::size_t n = text_.size();
  if (text_[pos_] == '-') ++pos_;
  if (pos_ >= n || !is_digit(text_[pos_])) return fail(begin, "invalid number");
  if (text_[pos_] == '0') {
    ++pos_;
  } else {
    while (pos_ < n && is_digit(text_[pos_])) ++pos_;
  }
  if (pos_ < n && text_[pos_] == '.') {
    ++pos_;
    if (pos_ >= n || !is_digit(text_[pos_])) return fail(begin, "invalid number: expected a digit after '.'");
    while (pos_ < n && is_digit(text_[pos_])) ++pos_;
  }
  if (pos_ < n && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < n && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (pos_ >= n || !is_digit(text_[pos_])) return fail(begin, "invalid number: expected a digit in the exponent");
    // Boost.JSON parses the spans afterwards and refuses an exponent that, with the mantissa's
    // digits, passes 2^31: at most 9 significant exponent digits keeps every number it accepts.
    while (pos_ < n && text_[pos_] == '0') ++pos_;
    std::size_t digits = pos_;
    while (pos_ < n && is_digit(text_[pos_])) ++pos_;
    if (pos_ - digits > 9) return fail(begin, "number out of range: its exponent has more than 9 digits");
  }
  return true;
}

bool JsonScanner::literal(std::string_view word) {
  if (text_.substr(pos_, word.size()) != word)
    return fail(pos_, "invalid literal (expected " + std::string(word) + ")");
  pos_ += word.size();
  return true;
}

std::size_t skip_json_space(std::string_view t, std::size_t pos) {
  while (pos < t.size() && is_ws(t[pos])) ++pos;
  return pos;
}

std::size_t skip_json_string(std::string_view t, std::size_t pos) {
  // memchr to each '"'; it closes the string unless an odd run of backslashes precedes it.
  std::size_t from = pos + 1;
  for (;;) {
    if (from >= t.size()) return t.size();
    const void* q = std::memchr(t.data() + from, '"', t.size() - from);
    if (q == nullptr) return t.size();
    std::size_t at = static_cast<std::size_t>(static_cast<const char*>(q) - t.data());
    std::size_t k = at;
    while (k > pos + 1 && t[k - 1] == '\\') --k;
    if ((at - k) % 2 == 0) return at + 1;
    from = at + 1;
  }
}

std::size_t skip_json_value(std::string_view t, std::size_t pos) {
  if (pos >= t.size()) return t.size();  // truncated input: callers read any bytes
  char c = t[pos];
  if (c == '"') return skip_json_string(t, pos);
  if (c == '{' || c == '[') {
    int depth = 0;
    for (; pos < t.size(); ++pos) {
      char d = t[pos];
      if (d == '"') {
        pos = skip_json_string(t, pos) - 1;
      } else if (d == '{' || d == '[') {
        ++depth;
      } else if ((d == '}' || d == ']') && --depth == 0) {
        return pos + 1;
      }
    }
    return pos;
  }
  while (pos < t.size() && t[pos] != ',' && t[pos] != '}' && t[pos] != ']' && !is_ws(t[pos])) ++pos;
  return pos;
}

bool for_each_json_member(std::string_view t, std::size_t object, const std::function<void(const JsonMember&)>& visit) {
  if (object >= t.size() || t[object] != '{') return false;
  std::size_t pos = skip_json_space(t, object + 1);
  while (pos < t.size() && t[pos] != '}') {
    if (t[pos] != '"') return false;
    const std::size_t key_end = skip_json_string(t, pos);
    std::size_t colon = skip_json_space(t, key_end);
    if (colon >= t.size() || t[colon] != ':') return false;
    const std::size_t value = skip_json_space(t, colon + 1);
    const std::size_t value_end = skip_json_value(t, value);
    if (value_end > t.size() || value >= t.size()) return false;
    visit(JsonMember{t.substr(pos + 1, key_end - pos - 2), pos, JsonSpan{value, value_end}});
    pos = skip_json_space(t, value_end);
    if (pos < t.size() && t[pos] == ',') pos = skip_json_space(t, pos + 1);
  }
  return pos < t.size();
}

bool for_each_json_element(std::string_view t, std::size_t array, const std::function<void(JsonSpan)>& visit) {
  if (array >= t.size() || t[array] != '[') return false;
  std::size_t pos = skip_json_space(t, array + 1);
  while (pos < t.size() && t[pos] != ']') {
    const std::size_t end = skip_json_value(t, pos);
    if (end >= t.size()) return false;
    visit(JsonSpan{pos, end});
    pos = skip_json_space(t, end);
    if (pos < t.size() && t[pos] == ',') pos = skip_json_space(t, pos + 1);
  }
  return pos < t.size();
}

namespace {

std::size_t skip_value(std::string_view t, std::size_t pos) { return skip_json_value(t, pos); }
std::size_t skip_ws(std::string_view t, std::size_t pos) { return skip_json_space(t, pos); }

}  // namespace

std::optional<JsonSpan> find_value_span(std::string_view t, const std::vector<PathStep>& path) {
  std::size_t pos = skip_ws(t, 0);
  for (const PathStep& step : path) {
    if (pos >= t.size()) return std::nullopt;
    if (step.index != static_cast<std::size_t>(-1)) {
      if (t[pos] != '[') return std::nullopt;
      pos = skip_ws(t, pos + 1);
      for (std::size_t i = 0;; ++i) {
        if (pos >= t.size() || t[pos] == ']') return std::nullopt;
        if (i == step.index) break;
        pos = skip_ws(t, skip_value(t, pos));
        if (pos < t.size() && t[pos] == ',') pos = skip_ws(t, pos + 1);
      }
      continue;
    }
    if (t[pos] != '{') return std::nullopt;
    pos = skip_ws(t, pos + 1);
    for (;;) {
      if (pos >= t.size() || t[pos] != '"') return std::nullopt;
      std::size_t key_end = skip_value(t, pos);
      std::string_view raw_key = t.substr(pos + 1, key_end - pos - 2);
      bool match = raw_key.find('\\') == std::string_view::npos ? raw_key == step.key
                                                                : unescape_json_string(raw_key) == step.key;
      pos = skip_ws(t, skip_ws(t, key_end) + 1);  // past ':'
      if (match) break;
      pos = skip_ws(t, skip_value(t, pos));
      if (pos < t.size() && t[pos] == ',') pos = skip_ws(t, pos + 1);
    }
  }
  if (pos >= t.size()) return std::nullopt;
  return JsonSpan{pos, skip_value(t, pos)};
}

LineColumn line_column(std::string_view text, std::size_t offset) {
  LineColumn lc;
  offset = std::min(offset, text.size());
  for (std::size_t i = 0; i < offset; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++lc.line;
      lc.column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++lc.column;
    }
  }
  return lc;
}

boost::json::value parse_json(std::string_view text, boost::system::error_code& ec) {
  boost::json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  return boost::json::parse(text, ec, {}, options);
}

std::optional<JsonErrorAt> find_json_error(std::string_view text) {
  JsonScanner scanner(text, kMaxJsonDepth);
  ScannedDocument doc;
  JsonErrorAt error;
  if (!scanner.scan_document(0, doc)) {
    error.offset = scanner.error().offset;
    error.what = scanner.error().what;
  } else if (std::size_t after = scanner.skip_whitespace(doc.span.end); after < text.size()) {
    error.offset = after;
    error.what = "unexpected content after the JSON document";
  } else {
    return std::nullopt;
  }
  error.at = line_column(text, error.offset);
  return error;
}

std::optional<boost::json::value> read_json(ValueParser& parser, std::string_view text, JsonSpan span, JsonErrorAt& refusal) {
  std::size_t begin = span.begin;
  while (begin < span.end && (text[begin] == ' ' || text[begin] == '\t' || text[begin] == '\r' || text[begin] == '\n')) ++begin;
  std::size_t end = begin;
  // The value must end inside the span: the parser reads on through whitespace past it.
  if (begin < span.end && parser.parse(begin, kMaxJsonDepth, end) && end <= span.end &&
      text.substr(end, span.end - end).find_first_not_of(" \t\r\n") == std::string_view::npos)
    return parser.take();
  const std::string_view own = text.substr(span.begin, span.end - span.begin);
  if (auto error = find_json_error(own)) {
    refusal = std::move(*error);
    return std::nullopt;
  }
  boost::system::error_code ec;
  boost::json::value value = parse_json(own, ec);
  if (ec) {
    refusal = JsonErrorAt{0, {}, ec.message()};
    return std::nullopt;
  }
  return value;
}

std::string JsonErrorAt::to_string(const std::string& source) const {
  return source + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + " (byte " + std::to_string(offset) +
         "): " + what;
}

std::string unescape_json_string(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  auto hex4 = [&](std::size_t at) {
    unsigned v = 0;
    for (std::size_t i = 0; i < 4 && at + i < raw.size(); ++i) v = v * 16 + static_cast<unsigned>(std::max(0, hex_value(raw[at + i])));
    return v;
  };
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c != '\\' || i + 1 >= raw.size()) {
      out += c;
      continue;
    }
    char e = raw[++i];
    switch (e) {
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        unsigned cp = hex4(i + 1);
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < raw.size() + 1 && raw.substr(i + 1, 2) == "\\u") {
          unsigned low = hex4(i + 3);
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          i += 6;
        }
        append_utf8(out, cp);
        break;
      }
      default: out += e; break;
    }
  }
  return out;
}

namespace {

namespace json = boost::json;

// Builds a message's Boost.JSON value while it validates it, with the scanner's own rules and
// loops (JsonScanner::string's eight-bytes-at-a-time skip, the same UTF-8 and escape checks):
// Boost.JSON's parser takes escaped strings a byte at a time through a side buffer, which was
// most of a run's parsing time on tool output (code and logs are full of \n and \").
class Builder {
 public:
  Builder(std::string_view text, json::value_stack& st, std::string& scratch, std::deque<std::string>& decoded,
          std::vector<std::string_view>& keys)
      : t_(text), st_(st), scratch_(scratch), decoded_(decoded), keys_(keys) {}

  bool parse(std::size_t pos, unsigned levels, std::size_t& end) {
    pos_ = pos;
    levels_ = levels;
    if (!value(0)) return false;
    end = pos_;
    return true;
  }

 private:
  void ws() {
    while (pos_ < t_.size() && is_ws(t_[pos_])) ++pos_;
  }

  bool value(unsigned depth) {
    if (pos_ >= t_.size()) return false;
    switch (t_[pos_]) {
      case '{': return object(depth + 1);
      case '[': return array(depth + 1);
      case '"': {
        std::string_view s;
        if (!string(s, false)) return false;
        st_.push_string(s);
        return true;
      }
      case 't': return literal("true") && (st_.push_bool(true), true);
      case 'f': return literal("false") && (st_.push_bool(false), true);
      case 'n': return literal("null") && (st_.push_null(), true);
      default: return number();
    }
  }

  bool object(unsigned depth) {
    if (depth > levels_) return false;
    ++pos_;  // '{'
    ws();
    std::size_t n = 0, first = keys_.size();
    if (pos_ < t_.size() && t_[pos_] == '}') {
      ++pos_;
      st_.push_object(0);
      return true;
    }
    for (;;) {
      ws();
      if (pos_ >= t_.size() || t_[pos_] != '"') return false;
      std::string_view key;
      if (!string(key, true)) return false;
      keys_.push_back(key);
      st_.push_key(key);
      ws();
      if (pos_ >= t_.size() || t_[pos_] != ':') return false;
      ++pos_;
      ws();
      if (!value(depth)) return false;
      ++n;
      ws();
      if (pos_ >= t_.size()) return false;
      if (t_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (t_[pos_] != '}') return false;
      ++pos_;
      break;
    }
    // Duplicate keys (decoded): the scanner refuses them, Boost.JSON would keep the last.
    if (n >= 2) {
      if (n <= 16) {
        for (std::size_t i = first + 1; i < keys_.size(); ++i)
          for (std::size_t j = first; j < i; ++j)
            if (keys_[i] == keys_[j]) return false;
      } else {
        std::vector<std::string_view> sorted(keys_.begin() + static_cast<std::ptrdiff_t>(first), keys_.end());
        std::sort(sorted.begin(), sorted.end());
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return false;
      }
    }
    keys_.resize(first);
    st_.push_object(n);
    return true;
  }

  bool array(unsigned depth) {
    if (depth > levels_) return false;
    ++pos_;  // '['
    ws();
    std::size_t n = 0;
    if (pos_ < t_.size() && t_[pos_] == ']') {
      ++pos_;
      st_.push_array(0);
      return true;
    }
    for (;;) {
      ws();
      if (!value(depth)) return false;
      ++n;
      ws();
      if (pos_ >= t_.size()) return false;
      if (t_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (t_[pos_] != ']') return false;
      ++pos_;
      st_.push_array(n);
      return true;
    }
  }

  // Past the bytes a string holds as they are (not a quote, a backslash, a control byte or the
  // start of a multi-byte sequence): sixteen, then eight bytes at a time, then by table.
  inline void skip_plain_bytes() {
    const std::size_t n = t_.size();
    const char* data = t_.data();
#ifdef __SSE2__
    // A signed compare below 0x20 catches control bytes and every byte of 0x80 and above
    // (negative as signed) at once.
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (pos_ + 16 <= n) {
      __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + pos_));
      __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, quote), _mm_cmpeq_epi8(w, backslash)),
                                     _mm_cmplt_epi8(w, space));
      unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(special));
      if (mask != 0) {
        pos_ += static_cast<std::size_t>(__builtin_ctz(mask));
        return;
      }
      pos_ += 16;
    }
#endif
    constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
    while (pos_ + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, data + pos_, 8);
      auto has_zero = [&](std::uint64_t v) { return (v - kOnes) & ~v & kHigh; };
      std::uint64_t special = has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\')) |
                              ((w - kOnes * 0x20) & ~w & kHigh) | (w & kHigh);
      if (special != 0) break;
      pos_ += 8;
    }
    while (pos_ < n && kPlain[static_cast<unsigned char>(data[pos_])]) ++pos_;
  }

  // The escape at pos_ (a backslash) decoded onto scratch_, pos_ past it; false when invalid.
  bool decode_escape() {
    const std::size_t n = t_.size();
    const char* data = t_.data();
    if (pos_ + 1 >= n) return false;
    char e = data[pos_ + 1];
    if (e == 'u') {
      auto read_hex = [&](std::size_t at, unsigned& v) { return read_hex4({data, n}, at, v); };
      unsigned cp = 0;
      if (!read_hex(pos_ + 2, cp) || (cp >= 0xDC00 && cp <= 0xDFFF)) return false;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        unsigned low = 0;
        if (pos_ + 7 >= n || data[pos_ + 6] != '\\' || data[pos_ + 7] != 'u' || !read_hex(pos_ + 8, low) ||
            low < 0xDC00 || low > 0xDFFF)
          return false;
        append_utf8(scratch_, 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00));
        pos_ += 12;
      } else {
        append_utf8(scratch_, cp);
        pos_ += 6;
      }
      return true;
    }
    char decoded;
    switch (e) {
      case '"': decoded = '"'; break;
      case '\\': decoded = '\\'; break;
      case '/': decoded = '/'; break;
      case 'b': decoded = '\b'; break;
      case 'f': decoded = '\f'; break;
      case 'n': decoded = '\n'; break;
      case 'r': decoded = '\r'; break;
      case 't': decoded = '\t'; break;
      default: return false;
    }
    scratch_ += decoded;
    pos_ += 2;
    return true;
  }

  // The string at pos_ decoded into `out`: a view of the text when it has no escapes, else of
  // the scratch buffer (or, for a key, of a kept copy). Validates as JsonScanner::string does.
  bool string(std::string_view& out, bool key) {
    const std::size_t open = pos_;
    ++pos_;  // '"'
    const std::size_t n = t_.size();
    const char* data = t_.data();
    bool escaped = false;
    std::size_t run = pos_;  // start of the bytes not yet copied to scratch_
    for (;;) {
      skip_plain_bytes();
      if (pos_ >= n) return false;
      unsigned char c = static_cast<unsigned char>(data[pos_]);
      if (c == '"') {
        if (!escaped) {
          out = t_.substr(open + 1, pos_ - open - 1);
        } else {
          scratch_.append(data + run, pos_ - run);
          if (key) out = decoded_.emplace_back(scratch_);
          else out = scratch_;
        }
        ++pos_;
        return true;
      }
      if (c == '\\') {
        if (!escaped) {
          escaped = true;
          scratch_.clear();
        }
        scratch_.append(data + run, pos_ - run);
        if (!decode_escape()) return false;
        run = pos_;
        continue;
      }
      if (c < 0x20) return false;
      std::size_t len = utf8_sequence(t_, pos_);
      if (len == 0) return false;
      pos_ += len;
    }
  }

  bool number() {
    const std::size_t n = t_.size();
    bool negative = false;
    if (t_[pos_] == '-') {
      negative = true;
      ++pos_;
    }
    if (pos_ >= n || !is_digit(t_[pos_])) return false;
    std::size_t int_begin = pos_;
    if (t_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < n && is_digit(t_[pos_])) ++pos_;
    }
    std::size_t int_digits = pos_ - int_begin;
    bool plain = true;
    if (pos_ < n && t_[pos_] == '.') {
      plain = false;
      ++pos_;
      if (pos_ >= n || !is_digit(t_[pos_])) return false;
      while (pos_ < n && is_digit(t_[pos_])) ++pos_;
    }
    if (pos_ < n && (t_[pos_] == 'e' || t_[pos_] == 'E')) {
      plain = false;
      ++pos_;
      if (pos_ < n && (t_[pos_] == '+' || t_[pos_] == '-')) ++pos_;
      if (pos_ >= n || !is_digit(t_[pos_])) return false;
      while (pos_ < n && t_[pos_] == '0') ++pos_;
      std::size_t digits = pos_;
      while (pos_ < n && is_digit(t_[pos_])) ++pos_;
      if (pos_ - digits > 9) return false;
    }
    // A plain integer of at most 18 digits is an int64 for Boost.JSON too. Any other number
    // sends the message back to the scanner and Boost.JSON's own parse of its span, as before:
    // Boost.JSON 1.81 reads a double a bit differently depending on how many bytes follow it
    // in its buffer (444444.444444444444 ends in ...c8 alone, ...c7 with 30 bytes after it), so
    // only the message's span as the buffer gives the same bits.
    if (!plain || int_digits > 18 || (negative && t_[int_begin] == '0')) return false;
    std::int64_t v = 0;
    for (std::size_t i = int_begin; i < pos_; ++i) v = v * 10 + (t_[i] - '0');
    st_.push_int64(negative ? -v : v);
    return true;
  }

  bool literal(std::string_view word) {
    if (t_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  std::string_view t_;
  json::value_stack& st_;
  std::string& scratch_;
  std::deque<std::string>& decoded_;
  std::vector<std::string_view>& keys_;
  std::size_t pos_ = 0;
  unsigned levels_ = 0;
};

}  // namespace

struct ValueParser::Impl {
  std::string_view text;
  json::value_stack st;
  std::string scratch;
  std::deque<std::string> decoded;
  std::vector<std::string_view> keys;
};

ValueParser::ValueParser(std::string_view text) : impl_(std::make_unique<Impl>()) { impl_->text = text; }

ValueParser::~ValueParser() = default;

bool ValueParser::parse(std::size_t pos, unsigned levels, std::size_t& end) {
  if (levels == 0 || pos >= impl_->text.size()) return false;
  impl_->st.reset();
  impl_->keys.clear();
  impl_->decoded.clear();
  Builder builder(impl_->text, impl_->st, impl_->scratch, impl_->decoded, impl_->keys);
  return builder.parse(pos, levels, end);
}

json::value ValueParser::take() { return impl_->st.release(); }

}  // namespace compactor::detail
