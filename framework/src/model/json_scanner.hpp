// A validating single-pass JSON scanner. It does what Boost.JSON's parser does not: reports the
// byte offset of every error, refuses duplicate object keys, enforces a depth limit, and records
// the byte spans of the values Compactor needs (the messages). With an ElementParser attached,
// each recorded element (each message) is parsed into its Boost.JSON value in the same pass
// (ValueParser, under the same rules), so no byte of a message is read twice; an element the
// fast parser refuses is scanned byte by byte for the located error.
#pragma once

#include <boost/json/fwd.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::detail {

// How deeply any JSON Compactor reads may nest (Boost.JSON's own default is 32): the conversation
// reader, the importers and every other parse of input bytes use this one limit.
inline constexpr unsigned kMaxJsonDepth = 256;

struct JsonSpan {
  std::size_t begin = 0;
  std::size_t end = 0;  // one past the last byte
};

struct ScannedMember {
  std::string_view key;  // raw key text between the quotes (escapes not decoded)
  JsonSpan value;
};

// What scan_document records about the top-level value.
struct ScannedDocument {
  JsonSpan span;
  char kind = 0;                            // '[' array, '{' object, or the first byte of a scalar
  std::vector<JsonSpan> elements;           // top-level array elements
  std::vector<ScannedMember> members;       // top-level object members
  std::vector<JsonSpan> messages_elements;  // elements of a top-level "messages" array
  bool has_messages_array = false;
};

struct ScanError {
  std::size_t offset = 0;
  std::string what;
};

// Called for each element of the arrays whose spans a scan records (the top-level array's, the
// "messages" array's): parses the element at `begin`, found at scanner depth `depth`, and
// returns true with `end` one past it, or false to let the scanner validate it itself.
class ElementParser {
 public:
  virtual bool parse_element(std::size_t begin, unsigned depth, std::size_t& end) = 0;

 protected:
  ~ElementParser() = default;
};

class JsonScanner {
 public:
  JsonScanner(std::string_view text, unsigned max_depth) : text_(text), max_depth_(max_depth) {}

  // Hands the recorded elements to `parser` (null: scan them here, as without one).
  void set_element_parser(ElementParser* parser) { element_parser_ = parser; }
  unsigned max_depth() const { return max_depth_; }

  // Scans one JSON value starting at `pos` (leading whitespace skipped). On success returns true
  // and fills `doc`; `doc.span.end` is where the value ends. On failure fills error().
  bool scan_document(std::size_t pos, ScannedDocument& doc);

  const ScanError& error() const { return error_; }

  std::size_t skip_whitespace(std::size_t pos) const;

 private:
  bool value(unsigned depth, ScannedDocument* top);
  bool object(unsigned depth, ScannedDocument* top);
  bool array(unsigned depth, std::vector<JsonSpan>* elements);
  bool string(std::string_view* raw);
  bool number();
  bool literal(std::string_view word);
  bool fail(std::size_t offset, std::string what);
  void ws() { pos_ = skip_whitespace(pos_); }

  std::string_view text_;
  unsigned max_depth_;
  std::size_t pos_ = 0;
  ScanError error_;
  ElementParser* element_parser_ = nullptr;
};

// The scanner's rules and loops building the Boost.JSON value as they validate (one pass): a
// value it accepts is one the scanner accepts (no duplicate keys, at most `levels` nested
// containers, the same UTF-8, escape and number checks), and the value is the one Boost.JSON
// parses from the bytes. It takes integers of up to 18 digits only: a value holding any other
// number is refused, and parsed as before (Boost.JSON's doubles depend on the bytes after them
// in its buffer). It reports no location: on false the caller scans the value for the located
// error. One parser is reused for every message, so its stacks are allocated once.
class ValueParser {
 public:
  explicit ValueParser(std::string_view text);
  ~ValueParser();
  ValueParser(const ValueParser&) = delete;
  ValueParser& operator=(const ValueParser&) = delete;

  // Parses the value starting at `pos` (no leading whitespace). On true, `end` is one past it
  // and take() gives the value.
  bool parse(std::size_t pos, unsigned levels, std::size_t& end);
  boost::json::value take();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Walking JSON already known to be valid (scanned or parsed before) without building values: where
// whitespace, a string or a value ends, and the members and elements of one object or array. The
// one way every part finds spans in bytes. On bytes that are not valid JSON they never read
// outside `text` (a truncated value ends at text.size(); a walk that meets one returns false),
// and what they find means nothing.
std::size_t skip_json_space(std::string_view text, std::size_t pos);
std::size_t skip_json_string(std::string_view text, std::size_t pos);  // at its opening quote: past the closing one
std::size_t skip_json_value(std::string_view text, std::size_t pos);   // at its first byte: one past its last
struct JsonMember {
  std::string_view key;  // raw, between the quotes (escapes not decoded)
  std::size_t begin = 0;  // the key's opening quote
  JsonSpan value;
};
// Each member of the object whose '{' is at `object`, in order; false when the walk met bytes that
// are not an object's.
bool for_each_json_member(std::string_view text, std::size_t object, const std::function<void(const JsonMember&)>& visit);
// Each element of the array whose '[' is at `array`, in order; false as above.
bool for_each_json_element(std::string_view text, std::size_t array, const std::function<void(JsonSpan)>& visit);

// 1-based line and column (in code points) of a byte offset, for error messages.
struct LineColumn {
  std::size_t line = 1;
  std::size_t column = 1;
};
LineColumn line_column(std::string_view text, std::size_t offset);

// One step of a path into a JSON value: an object key or an array index.
struct PathStep {
  std::string_view key;   // used when index is npos
  std::size_t index = static_cast<std::size_t>(-1);
};

// The span of the value at `path` inside `text`, which must be valid JSON (already scanned);
// nothing when the path does not exist. On other bytes (an adapter looks for a key before it
// parses a body) it never reads outside `text`, and what it finds means nothing.
std::optional<JsonSpan> find_value_span(std::string_view text, const std::vector<PathStep>& path);

// Boost.JSON's parse of a whole text under kMaxJsonDepth (its default of 32 would refuse input
// the conversation reader accepts).
boost::json::value parse_json(std::string_view text, boost::system::error_code& ec);

// Where a text stops being JSON, found by scanning it (find_json_error: nothing when the scanner
// accepts the whole text).
struct JsonErrorAt {
  std::size_t offset = 0;
  LineColumn at;
  std::string what;
  // `source:line:col (byte N): what`, the conversation reader's form.
  std::string to_string(const std::string& source) const;
};
std::optional<JsonErrorAt> find_json_error(std::string_view text);

// The JSON value in `span` of `parser`'s text (one value and whitespace), read under the
// conversation reader's rules (kMaxJsonDepth, no key given twice) in one pass; nothing, with
// where and why in `refusal` (offsets within the span), when the span breaks them. A span the
// one-pass parser leaves alone (a number past 18 digits) is scanned, then parsed by Boost.JSON.
// One parser serves every span of its text, so its stacks are allocated once.
std::optional<boost::json::value> read_json(ValueParser& parser, std::string_view text, JsonSpan span, JsonErrorAt& refusal);

// Decodes a raw JSON string body (the text between the quotes, already validated).
std::string unescape_json_string(std::string_view raw);

}  // namespace compactor::detail
