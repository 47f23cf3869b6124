#include "mcp/blob_view.hpp"

#include "compactor/size_unit.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>

#include <optional>
#include <utility>
#include <vector>

namespace compactor::mcp {
namespace json = boost::json;

namespace {

constexpr std::uint64_t kCheckpoint = 4096;

// Whether `s` is UTF-8 as JSON requires it: no overlong form, no surrogate, nothing past U+10FFFF.
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) n = 1, cp = c & 0x1Fu;
    else if (c >= 0xE0 && c <= 0xEF) n = 2, cp = c & 0x0Fu;
    else if (c >= 0xF0 && c <= 0xF4) n = 3, cp = c & 0x07u;
    else return false;
    if (i + n >= s.size()) return false;  // cut short
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF))) return false;
    i += n + 1;
  }
  return true;
}

// The JSON values of `bytes`, one after the other (whitespace between them), or nothing when
// they are not such a sequence. A snapshot is JSONL, but a message's bytes are the input's, so a
// pretty-printed input's messages span lines: values are read, not lines.
std::optional<std::vector<json::value>> json_values(std::string_view bytes) {
  json::parse_options options;
  options.max_depth = detail::kMaxJsonDepth;
  json::parser parser(json::storage_ptr(), options);
  std::vector<json::value> out;
  std::size_t pos = 0;
  for (pos = detail::skip_json_space(bytes, pos); pos < bytes.size(); pos = detail::skip_json_space(bytes, pos)) {
    parser.reset();
    boost::system::error_code ec;
    // The rest of the text is all there is: the parser stops after one value, or at the end.
    pos += parser.write_some(bytes.data() + pos, bytes.size() - pos, ec);
    if (ec) return std::nullopt;
    out.push_back(parser.release());
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

// Builds a view's text a piece at a time, counting code points as it goes.
class BlobViewBuilder {
 public:
  explicit BlobViewBuilder(BlobView::Kind kind) { view_.kind_ = kind; }

  void append(std::string_view s) {
    view_.text_ += s;
    view_.chars_ += count_code_points(s);
  }
  std::size_t next_image() const { return view_.images_.size() + pending_.size() + 1; }

  // Takes the base64 data out of every `source` in `v` (an image's, a document's), leaving a
  // placeholder there; an image's data is kept, to be given as image content.
  void strip_media(json::value& v) {
    if (v.is_array()) {
      for (auto& e : v.get_array()) strip_media(e);
      return;
    }
    if (!v.is_object()) return;
    json::object& o = v.get_object();
    if (json::value* source = o.if_contains("source"); source != nullptr && source->is_object()) {
      json::object& s = source->get_object();
      const json::value* type = s.if_contains("type");
      json::value* data = s.if_contains("data");
      if (type != nullptr && type->is_string() && type->get_string() == "base64" && data != nullptr && data->is_string()) {
        const json::value* media = s.if_contains("media_type");
        std::string mime;  // kept to what JSON writes as it is, so the placeholder is found verbatim
        if (media != nullptr && media->is_string())
          for (char c : media->get_string())
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' || c == '+' || c == '.' || c == '-')
              mime += c;
        const json::value* block_type = o.if_contains("type");
        if (block_type != nullptr && block_type->is_string() && block_type->get_string() == "image") {
          std::string placeholder = "[image " + std::to_string(next_image()) + (mime.empty() ? "" : ", " + mime) +
                                    ": given as image content]";
          pending_.push_back({placeholder, BlobImage{0, std::move(mime), std::string(data->get_string())}});
          *data = placeholder;
        } else {
          *data = "[" + std::to_string(data->get_string().size()) +
                  " bytes of base64 left out; `compactor restore` with this receipt gives them]";
        }
      }
    }
    for (auto& [key, value] : o)
      if (key != "source") strip_media(value);
  }

  // Appends `line` (serialized after strip_media) and anchors the images it holds at their
  // placeholders.
  void append_with_images(std::string_view line) {
    const std::uint64_t start = view_.chars_;
    std::size_t from = 0;
    for (auto& [placeholder, image] : pending_) {
      // Always found: the placeholder is ASCII that JSON writes as it is.
      std::size_t at = line.find(placeholder, from);
      if (at == std::string_view::npos) at = from;
      image.at = start + count_code_points(line.substr(0, at));
      from = at + placeholder.size();
      view_.images_.push_back(std::move(image));
    }
    pending_.clear();
    append(line);
  }

  BlobView finish() {
    view_.checkpoints_.push_back(0);
    std::uint64_t cp = 0;
    const std::string& t = view_.text_;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if ((static_cast<unsigned char>(t[i]) & 0xC0) == 0x80) continue;
      if (cp > 0 && cp % kCheckpoint == 0) view_.checkpoints_.push_back(i);
      ++cp;
    }
    return std::move(view_);
  }

  BlobView& view() { return view_; }

 private:
  BlobView view_;
  std::vector<std::pair<std::string, BlobImage>> pending_;  // images of the piece being built
};

namespace {

// A tool result's blocks: text as it is, an image as its placeholder line, anything else as its
// JSON on a line of its own (a document's data left out).
void add_blocks(BlobViewBuilder& b, const json::array& blocks) {
  bool first = true;
  for (const json::value& block : blocks) {
    if (!first) b.append("\n");
    first = false;
    const json::object* o = block.if_object();
    const json::value* type = o != nullptr ? o->if_contains("type") : nullptr;
    const json::value* text = o != nullptr ? o->if_contains("text") : nullptr;
    if (type != nullptr && type->is_string() && type->get_string() == "text" && text != nullptr && text->is_string()) {
      b.append(std::string_view(text->get_string()));
      continue;
    }
    json::value copy = block;
    b.strip_media(copy);
    // An image (its data now its placeholder) is the placeholder alone; anything else its JSON.
    const json::value* source = copy.is_object() ? copy.get_object().if_contains("source") : nullptr;
    const json::value* data = source != nullptr && source->is_object() ? source->get_object().if_contains("data") : nullptr;
    const bool image = type != nullptr && type->is_string() && type->get_string() == "image";
    if (image && data != nullptr && data->is_string() && data->get_string().starts_with("[image "))
      b.append_with_images(std::string_view(data->get_string()));
    else
      b.append_with_images(json::serialize(copy));
  }
}

}  // namespace

Expected<BlobView> BlobView::of(std::string_view bytes) {
  if (auto values = json_values(bytes)) {
    const json::value& first = values->front();
    if (values->size() == 1 && first.is_string()) {
      BlobViewBuilder b(Kind::text);
      b.append(std::string_view(first.get_string()));
      return b.finish();
    }
    if (values->size() == 1 && first.is_array()) {
      BlobViewBuilder b(Kind::blocks);
      add_blocks(b, first.get_array());
      return b.finish();
    }
    bool messages = true;
    for (const json::value& v : *values) messages = messages && v.is_object();
    if (messages) {
      BlobViewBuilder b(Kind::messages);
      for (json::value& v : *values) {
        b.strip_media(v);
        b.append_with_images(json::serialize(v));
        b.append("\n");
      }
      b.view().messages_ = values->size();
      return b.finish();
    }
  }
  if (!valid_utf8(bytes)) return Error{"holds bytes that are not UTF-8 text: `compactor restore` with this receipt gives them"};
  BlobViewBuilder b(Kind::raw);
  b.append(bytes);
  return b.finish();
}

std::size_t BlobView::byte_at(std::uint64_t n) const {
  if (n >= chars_) return text_.size();
  std::size_t i = checkpoints_[static_cast<std::size_t>(n / kCheckpoint)];
  for (std::uint64_t left = n % kCheckpoint; left > 0; --left) {
    ++i;
    while (i < text_.size() && (static_cast<unsigned char>(text_[i]) & 0xC0) == 0x80) ++i;
  }
  return i;
}

}  // namespace compactor::mcp
