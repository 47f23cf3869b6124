// An archived blob as the model reads it back through MCP: what it saw, not the JSON it was
// stored as. A tool result's content that is a string is that text, decoded; one that is a list
// of blocks is their text, one block after the other on its own lines, with each image in its
// place as a one-line placeholder and its data given as MCP image content. A snapshot of messages
// (snip's middle, a summary's history: JSON values one after the other) is one message a line,
// each as compact JSON, an image's base64 data replaced by its placeholder. Anything else (a blob
// that is not JSON) is its bytes as text, when they are UTF-8. Offsets are in code points.
#pragma once

#include "compactor/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::mcp {

struct BlobImage {
  std::uint64_t at = 0;   // the code point where its placeholder starts in the view's text
  std::string mime_type;  // as archived ("image/png")
  std::string data;       // base64, as archived
};

class BlobView {
 public:
  enum class Kind {
    text,      // a tool result's content, a string
    blocks,    // a tool result's content, a list of blocks
    messages,  // a snapshot of messages, one a line
    raw,       // not JSON: the bytes themselves
  };

  // Fails only on bytes that are neither JSON nor UTF-8 text.
  static Expected<BlobView> of(std::string_view bytes);

  Kind kind() const { return kind_; }
  const std::string& text() const { return text_; }
  const std::vector<BlobImage>& images() const { return images_; }
  std::uint64_t chars() const { return chars_; }
  std::size_t messages() const { return messages_; }  // kind messages: how many
  // The byte offset in text() where code point `n` starts (text().size() for n ≥ chars()).
  std::size_t byte_at(std::uint64_t n) const;

 private:
  friend class BlobViewBuilder;
  Kind kind_ = Kind::raw;
  std::string text_;
  std::vector<BlobImage> images_;
  std::uint64_t chars_ = 0;
  std::size_t messages_ = 0;
  std::vector<std::size_t> checkpoints_;  // byte offset of every kCheckpoint-th code point
};

}  // namespace compactor::mcp
