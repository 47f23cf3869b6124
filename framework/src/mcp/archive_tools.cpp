#include "mcp/archive_tools.hpp"

#include "archive/archive_store.hpp"
#include "store/folder_store.hpp"
#include "archive/folder_trust.hpp"
#include "compactor/archive.hpp"
#include "compactor/size_unit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <set>
#include <sys/stat.h>

namespace compactor::mcp {
namespace json = boost::json;

namespace {

constexpr std::size_t kCachedViews = 8;
constexpr std::size_t kCachedBytes = std::size_t{64} << 20;
// A hit shows its whole line when the line is short, else this much around the match.
constexpr std::uint64_t kWholeLineChars = 300;
constexpr std::uint64_t kBeforeMatch = 100;
constexpr std::uint64_t kAfterMatch = 200;

// What the model wrote, quoted in an error, cut short: it may be anything.
std::string quoted(std::string_view text) {
  std::string out = json::serialize(json::string(text.substr(0, 80)));
  if (text.size() > 80) out.insert(out.size() - 1, "…");
  return out;
}

std::optional<std::string> unknown_argument(const json::object& arguments, std::initializer_list<std::string_view> known,
                                            std::string_view takes) {
  for (const auto& [key, value] : arguments)
    if (std::find(known.begin(), known.end(), key) == known.end()) return "unknown argument " + quoted(key) + ": " + std::string(takes);
  return std::nullopt;
}

// A receipt argument, checked before it can name a file: sha256: and 64 lowercase hex digits.
std::optional<std::string> receipt_argument(const json::object& arguments, std::string& error) {
  const json::value* v = arguments.if_contains("receipt");
  if (v == nullptr) error = "receipt is required: the sha256:… that a [compactor …] marker or a summary names";
  else if (!v->is_string()) error = "receipt must be a string: sha256: and 64 lowercase hex digits";
  else if (!is_receipt(v->get_string()))
    error = quoted(v->get_string()) + " is not a receipt: a receipt is sha256: and 64 lowercase hex digits, as a marker names it";
  else return std::string(v->get_string());
  return std::nullopt;
}

// A whole number argument: an integer, or a number without a fraction (some clients send 20000.0).
std::optional<std::uint64_t> whole_argument(const json::object& arguments, const char* name, std::uint64_t fallback,
                                            std::uint64_t min, std::uint64_t max, std::string& error) {
  const json::value* v = arguments.if_contains(name);
  if (v == nullptr) return fallback;
  std::optional<std::uint64_t> n;
  if (v->is_uint64()) n = v->get_uint64();
  else if (v->is_int64() && v->get_int64() >= 0) n = static_cast<std::uint64_t>(v->get_int64());
  else if (v->is_double() && v->get_double() >= 0 && v->get_double() < 1e18 && std::floor(v->get_double()) == v->get_double())
    n = static_cast<std::uint64_t>(v->get_double());
  if (!n || *n < min || *n > max) {
    std::string got = v->is_string()   ? quoted(v->get_string()) + " (a string)"
                      : v->is_double() ? fmt::format("{}", v->get_double())
                                       : json::serialize(*v).substr(0, 80);
    error = std::string(name) + " must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) + ", got " + got;
    return std::nullopt;
  }
  return n;
}

json::object text_item(std::string text) { return json::object{{"type", "text"}, {"text", std::move(text)}}; }

json::object receipt_schema() {
  return json::object{{"type", "string"}, {"description", "sha256: and 64 hex digits, as a [compactor …] marker or a summary names it"}};
}

}  // namespace

ArchiveTools::ArchiveTools(std::string dir) : dir_(std::move(dir)), store_(std::make_unique<store::FolderStore>(dir_)) {}

ArchiveTools::ArchiveTools(std::unique_ptr<store::Store> store, std::string folder, std::string hidden)
    : dir_(std::move(folder)), hidden_(std::move(hidden)), store_(std::move(store)) {}

std::string ArchiveTools::shown(std::string message) const {
  static constexpr std::string_view kShown = "<archive>";
  if (hidden_.empty()) return message;
  for (std::size_t at = 0; (at = message.find(hidden_, at)) != std::string::npos; at += kShown.size())
    message.replace(at, hidden_.size(), kShown);
  return message;
}

Expected<std::shared_ptr<const BlobView>> ArchiveTools::load(const std::string& receipt) const {
  // Checked at every call, not once: the folder may change hands while the server runs.
  if (!dir_.empty())
    if (auto distrust = archive_folder_distrust(dir_)) return Error{"refused: the archive " + *distrust};
  {
    std::lock_guard lock(mutex_);
    for (auto it = cache_.begin(); it != cache_.end(); ++it)
      if (it->first == receipt) {
        cache_.splice(cache_.begin(), cache_, it);
        return cache_.front().second;
      }
  }
  struct stat st {};
  if (!dir_.empty() && (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)))
    return Error{"no archive at " + dir_ + " yet: nothing has been archived there" +
                 // A local server's user may have started it on the wrong folder; serve's clients cannot.
                 std::string(hidden_.empty() ? " (this server reads the archive.dir that compactor serve writes)" : "")};
  Expected<std::string> bytes = Error{""};
  {
    std::lock_guard lock(store_mutex_);
    bytes = store_->restore(receipt);
  }
  if (!bytes) return bytes.error();
  auto view = BlobView::of(*bytes);
  if (!view) return Error{receipt + " " + view.error().message};
  auto shared = std::make_shared<const BlobView>(std::move(view).value());
  std::size_t size = shared->text().size();
  for (const BlobImage& image : shared->images()) size += image.data.size();
  if (size <= kCachedBytes) {
    std::lock_guard lock(mutex_);
    cache_.emplace_front(receipt, shared);
    std::size_t total = 0, kept = 0;
    for (auto it = cache_.begin(); it != cache_.end(); ++it, ++kept) {
      std::size_t s = it->second->text().size();
      for (const BlobImage& image : it->second->images()) s += image.data.size();
      total += s;
      if (kept == kCachedViews || total > kCachedBytes) {
        cache_.erase(it, cache_.end());
        break;
      }
    }
  }
  return shared;
}

ToolResult ArchiveTools::restore(const json::object& arguments) const {
  std::string error;
  if (auto unknown = unknown_argument(arguments, {"receipt", "offset", "max_chars"}, "restore takes receipt, offset and max_chars"))
    return ToolResult::error(*unknown);
  auto receipt = receipt_argument(arguments, error);
  if (!receipt) return ToolResult::error(error);
  auto offset = whole_argument(arguments, "offset", 0, 0, UINT64_MAX >> 1, error);
  if (!offset) return ToolResult::error(error);
  auto max_chars = whole_argument(arguments, "max_chars", kDefaultPageChars, 1, kMaxPageChars, error);
  if (!max_chars) return ToolResult::error(error);
  auto view = load(*receipt);
  if (!view) return ToolResult::error(shown(view.error().message));
  const BlobView& v = **view;
  if (*offset > 0 && *offset >= v.chars())
    return ToolResult::error("offset " + std::to_string(*offset) + " is past the end: " + *receipt + " holds " +
                             std::to_string(v.chars()) + " chars");

  // The page: max_chars from offset, ended early before a fifth image so that no page carries
  // more than four.
  std::uint64_t end = std::min(v.chars(), *offset + *max_chars);
  const auto& images = v.images();
  auto first = std::lower_bound(images.begin(), images.end(), *offset, [](const BlobImage& i, std::uint64_t at) { return i.at < at; });
  auto last = first;
  while (last != images.end() && last->at < end) {
    if (static_cast<std::size_t>(last - first) == kMaxImagesPerPage) {
      end = last->at;
      break;
    }
    ++last;
  }
  const std::size_t from = v.byte_at(*offset), to = v.byte_at(end);
  ToolResult r;
  r.content.push_back(text_item(v.text().substr(from, to - from)));
  for (auto it = first; it != last; ++it)
    r.content.push_back(json::object{{"type", "image"}, {"data", it->data}, {"mimeType", it->mime_type}});
  if (end < v.chars())
    r.content.push_back(text_item(std::to_string(v.chars() - end) + " more chars: call again with offset=" + std::to_string(end)));
  return r;
}

ToolResult ArchiveTools::search(const json::object& arguments) const {
  std::string error;
  if (auto unknown = unknown_argument(arguments, {"pattern", "receipt"}, "search takes pattern and receipt"))
    return ToolResult::error(*unknown);
  const json::value* p = arguments.if_contains("pattern");
  if (p == nullptr || !p->is_string() || p->get_string().empty())
    return ToolResult::error("pattern is required: the text to find, a non-empty string");
  const std::string pattern(p->get_string());
  if (count_code_points(pattern) > kMaxPatternChars)
    return ToolResult::error("pattern is longer than " + std::to_string(kMaxPatternChars) + " chars");
  if (pattern.find_first_of("\r\n") != std::string::npos)
    return ToolResult::error("pattern holds a line break: search finds text within one line");
  auto root = receipt_argument(arguments, error);
  if (!root) return ToolResult::error(error);
  auto root_view = load(*root);
  if (!root_view) return ToolResult::error(shown(root_view.error().message));
  // In messages, one JSON message a line, text is escaped: a quote or a tab in the pattern is
  // looked for as JSON writes it too.
  std::string escaped = json::serialize(json::string(pattern));
  escaped = escaped.substr(1, escaped.size() - 2);

  struct Hit {
    std::string receipt;
    std::uint64_t offset;
    std::string excerpt;
  };
  std::vector<Hit> hits;
  std::size_t matching = 0, blobs_with_hits = 0, searched = 0, missing = 0;
  bool capped = false;
  std::deque<std::string> queue{*root};
  std::set<std::string, std::less<>> seen{*root};
  while (!queue.empty()) {
    if (searched == kMaxBlobsSearched) {
      capped = true;
      break;
    }
    std::string receipt = std::move(queue.front());
    queue.pop_front();
    std::shared_ptr<const BlobView> view;
    if (receipt == *root) {
      view = *root_view;
    } else if (auto loaded = load(receipt)) {
      view = std::move(loaded).value();
    } else {
      ++missing;  // named, but gone (gc), another archive's or corrupted: the others are still searched
      continue;
    }
    ++searched;
    const BlobView& v = *view;
    const std::string& text = v.text();
    std::vector<std::string_view> needles{pattern};
    if (v.kind() == BlobView::Kind::messages && escaped != pattern) needles.push_back(escaped);
    std::size_t before = matching;
    std::uint64_t line_cp = 0;
    for (std::size_t start = 0; start <= text.size();) {
      std::size_t nl = text.find('\n', start);
      const std::size_t stop = nl == std::string::npos ? text.size() : nl;
      const std::string_view line(text.data() + start, stop - start);
      std::size_t at = std::string_view::npos, length = 0;
      for (std::string_view needle : needles)
        if (std::size_t f = line.find(needle); f < at) at = f, length = needle.size();
      const std::uint64_t line_chars = count_code_points(line);
      if (at != std::string_view::npos && ++matching <= kMaxHits) {
        Hit hit{receipt, line_cp, std::string(line)};
        if (line_chars > kWholeLineChars) {
          const std::uint64_t match = line_cp + count_code_points(line.substr(0, at));
          const std::uint64_t first = std::max(line_cp, match > kBeforeMatch ? match - kBeforeMatch : 0);
          const std::uint64_t last =
              std::min(line_cp + line_chars, match + count_code_points(line.substr(at, length)) + kAfterMatch);
          hit.offset = first;
          hit.excerpt = (first > line_cp ? "…" : "") + text.substr(v.byte_at(first), v.byte_at(last) - v.byte_at(first)) +
                        (last < line_cp + line_chars ? "…" : "");
        }
        hits.push_back(std::move(hit));
      }
      line_cp += line_chars + 1;
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    blobs_with_hits += matching > before;
    // What this blob names: a marker's receipt, a summary's snapshot of the history before it.
    for (std::string& named : find_receipts(text))
      if (seen.insert(named).second) queue.push_back(std::move(named));
  }

  std::string out;
  for (const Hit& h : hits) out += h.receipt + " offset=" + std::to_string(h.offset) + ": " + h.excerpt + "\n";
  // The other blobs searched are those the root's receipts lead to, at any depth.
  const std::size_t others = searched - 1;
  const std::string reached = others == 0   ? ""
                              : others == 1 ? " and the blob it leads to"
                                            : " and the " + std::to_string(others) + " blobs it leads to";
  if (matching == 0) out += "no line contains " + quoted(pattern) + " in " + *root + reached;
  else
    out += std::to_string(matching) + (matching == 1 ? " matching line in " : " matching lines in ") + std::to_string(blobs_with_hits) +
           " of " + std::to_string(searched) + (searched == 1 ? " blob searched (" : " blobs searched (") + *root + reached + ")";
  if (matching > kMaxHits) out += "; the first " + std::to_string(kMaxHits) + " are shown: give a longer pattern";
  if (missing > 0) out += "; " + std::to_string(missing) + " named receipt(s) could not be read (not in this archive, or corrupted)";
  if (capped) out += "; stopped after " + std::to_string(kMaxBlobsSearched) + " blobs";
  return ToolResult::text(std::move(out));
}

std::vector<Tool> ArchiveTools::tools() const {
  Tool restore_tool;
  restore_tool.name = "restore";
  restore_tool.title = "Restore archived content";
  restore_tool.description =
      "Gives back what Compactor archived under a receipt (the sha256:… in a [compactor …] marker or a summary): a tool "
      "result's text and images, or archived messages, one JSON message a line. Returns at most max_chars characters "
      "(default 20000) from offset (in characters); a page that is not the last ends with the offset to call again with.";
  restore_tool.input_schema = json::object{
      {"type", "object"},
      {"properties", json::object{{"receipt", receipt_schema()},
                                  {"offset", json::object{{"type", "integer"},
                                                          {"minimum", 0},
                                                          {"description", "first character to return (default 0)"}}},
                                  {"max_chars", json::object{{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxPageChars},
                                                             {"description", "characters to return (default 20000)"}}}}},
      {"required", json::array{"receipt"}},
  };
  restore_tool.call = [this](const json::object& a) { return restore(a); };

  Tool search_tool;
  search_tool.name = "search";
  search_tool.title = "Search archived content";
  search_tool.description =
      "Finds the lines that contain pattern (plain text, case-sensitive) in what a receipt holds and in the archived blobs "
      "whose receipts appear in it (a summary's snapshot reaches everything summarized before it). Each hit gives the "
      "receipt and the offset to pass to restore; at most 50 hits.";
  search_tool.input_schema = json::object{
      {"type", "object"},
      {"properties", json::object{{"pattern", json::object{{"type", "string"}, {"description", "the text to find, within one line"}}},
                                  {"receipt", receipt_schema()}}},
      {"required", json::array{"pattern", "receipt"}},
  };
  search_tool.call = [this](const json::object& a) { return search(a); };
  return {std::move(restore_tool), std::move(search_tool)};
}

}  // namespace compactor::mcp
