// A validating single-pass JSON scanner. It does what Boost.JSON's parser does not: reports the
// byte offset of every error, refuses duplicate object keys, enforces a depth limit, and records
// the byte spans of the values Compactor needs (the messages). The spans are then parsed with
// Boost.JSON, which can no longer fail on syntax.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::detail {

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

class JsonScanner {
 public:
  JsonScanner(std::string_view text, unsigned max_depth) : text_(text), max_depth_(max_depth) {}

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
};

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
// nothing when the path does not exist.
std::optional<JsonSpan> find_value_span(std::string_view text, const std::vector<PathStep>& path);

// Decodes a raw JSON string body (the text between the quotes, already validated).
std::string unescape_json_string(std::string_view raw);

}  // namespace compactor::detail
