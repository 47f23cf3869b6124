#include "model/conversation_reader.hpp"

#include "model/conversation_host.hpp"
#include "model/field_types.hpp"
#include "model/large_buffer.hpp"
#include "model/json_scanner.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compactor {
namespace {

using detail::JsonScanner;
using detail::JsonSpan;
using detail::ScannedDocument;

// One pass over the input: the scanner validates the frame (the array, the request body, the
// lines) and hands each message to a ValueParser, which validates it under the same rules while
// it builds the message's Boost.JSON value. Only a message the fast parser refuses is scanned
// byte by byte, for the located error (or, should the scanner accept it, parsed as before).
class Reader final : private detail::ElementParser {
 public:
  Reader(std::string bytes, const ReadOptions& options)
      : buffer_(std::make_shared<const std::string>(std::move(bytes))), text_(*buffer_), options_(options),
        scanner_(text_, options.max_depth), parser_(text_) {
    scanner_.set_element_parser(this);
  }

  Expected<Conversation> read();

 private:
  // Levels of nesting the fast parser may allow for a value found at scanner depth `depth`.
  unsigned levels_at(unsigned depth) const { return depth > options_.max_depth ? 0 : options_.max_depth - depth + 1; }
  bool parse_element(std::size_t begin, unsigned depth, std::size_t& end) override {
    if (!parser_.parse(begin, levels_at(depth), end)) return false;
    parsed_.push_back({begin, parser_.take()});
    return true;
  }
  // A JSONL line: parsed in one pass, or scanned for its error.
  bool scan_line(std::size_t pos, ScannedDocument& doc) {
    std::size_t end = 0;
    if (pos < text_.size() && parser_.parse(pos, levels_at(1), end)) {
      parsed_.push_back({pos, parser_.take()});
      doc.span = {pos, end};
      doc.kind = text_[pos];
      return true;
    }
    return scanner_.scan_document(pos, doc);
  }

  Error syntax_error(const detail::ScanError& e) const { return at(e.offset, e.what, true); }
  Error at(std::size_t offset, const std::string& what, bool with_byte) const {
    auto lc = detail::line_column(text_, offset);
    std::string where = options_.source + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.column);
    if (with_byte) where += " (byte " + std::to_string(offset) + ")";
    return Error{where + ": " + what};
  }
  Expected<Conversation> build(InputFormat format, const std::vector<JsonSpan>& spans, std::size_t empty_at,
                               Sizes fixed);

  std::shared_ptr<const std::string> buffer_;
  std::string_view text_;
  const ReadOptions& options_;
  JsonScanner scanner_;
  detail::ValueParser parser_;
  // The values parsed during the scan, by the offset their message begins at, in input order.
  struct Parsed {
    std::size_t begin;
    boost::json::value value;
  };
  std::vector<Parsed> parsed_;
  // `system` and `tools` typed as the API types them; problems wait for the messages' own.
  void check_fixed(std::string_view key, std::size_t offset, std::string_view json) {
    boost::json::parse_options options;
    options.max_depth = 100000;  // depth was enforced by the scanner
    boost::system::error_code ec;
    boost::json::value value = boost::json::parse(json, ec, {}, options);
    if (ec) return;
    std::vector<std::string> lines;
    if (key == "system") detail::system_field_problems(value, lines);
    else detail::tools_field_problems(value, lines);
    for (const auto& line : lines) fixed_problems_ += (fixed_problems_.empty() ? "" : "\n") + at(offset, line, false).message;
  }

  std::vector<std::string_view> fixed_json_;
  std::string fixed_problems_;
};

Sizes span_sizes(std::string_view text) { return Sizes{count_code_points(text), text.size()}; }

Expected<Conversation> Reader::read() {
  std::size_t start = scanner_.skip_whitespace(0);
  if (start >= text_.size())
    return at(start, "empty input: expected a messages array, a request body or JSONL messages", true);

  InputFormat format;
  ScannedDocument doc;
  bool scanned = false;  // `doc` already holds the whole input's scan (a request body)
  if (options_.format) {
    format = *options_.format;
  } else if (text_[start] == '[') {
    format = InputFormat::messages_array;
  } else if (text_[start] == '{') {
    // One object is a request body; several objects, a line each, are JSONL.
    if (!scanner_.scan_document(start, doc)) return syntax_error(scanner_.error());
    std::size_t after = scanner_.skip_whitespace(doc.span.end);
    bool is_message = false;
    for (const auto& m : doc.members) is_message |= m.key == "role";
    format = (after < text_.size() || is_message) ? InputFormat::jsonl : InputFormat::request_body;
    scanned = format == InputFormat::request_body;
    if (!scanned) {
      parsed_.clear();  // a message's own "messages" array, if it had one: not messages
      doc = ScannedDocument{};
    }
  } else {
    return at(start, "expected a messages array '[', a request body '{' or JSONL messages", true);
  }

  if (format == InputFormat::jsonl) {
    std::vector<JsonSpan> spans;
    std::size_t pos = start;
    while (pos < text_.size()) {
      ScannedDocument line;
      if (!scan_line(pos, line)) return syntax_error(scanner_.error());
      spans.push_back(line.span);
      std::size_t next = scanner_.skip_whitespace(line.span.end);
      if (next < text_.size() && text_.substr(line.span.end, next - line.span.end).find('\n') == std::string_view::npos)
        return at(next, "expected a new line after a JSONL message", true);
      pos = next;
    }
    return build(format, spans, start, {});
  }

  if (!scanned && !scanner_.scan_document(start, doc)) return syntax_error(scanner_.error());
  std::size_t after = scanner_.skip_whitespace(doc.span.end);
  if (after < text_.size()) return at(after, "unexpected content after the JSON document", true);

  if (format == InputFormat::messages_array) {
    if (doc.kind != '[') return at(start, "expected a messages array", true);
    return build(format, doc.elements, start, {});
  }
  if (doc.kind != '{') return at(start, "expected a request body object", true);
  Sizes fixed;
  fixed_json_.clear();
  const detail::ScannedMember* messages = nullptr;
  for (const auto& m : doc.members) {
    if (m.key == "messages") messages = &m;
    if (m.key == "system" || m.key == "tools") {
      fixed_json_.push_back(text_.substr(m.value.begin, m.value.end - m.value.begin));
      fixed += span_sizes(fixed_json_.back());
      check_fixed(m.key, m.value.begin, fixed_json_.back());
    }
  }
  if (messages == nullptr) return at(start, "request body has no \"messages\"", true);
  if (!doc.has_messages_array) return at(messages->value.begin, "\"messages\" must be an array", true);
  return build(format, doc.messages_elements, messages->value.begin, fixed);
}

// Why a system entry's content is not a string or text blocks; empty when it is.
std::string entry_content_problem(const boost::json::value* content) {
  if (content == nullptr) return "it has no \"content\"";
  if (content->is_string()) return "";
  const auto* items = content->if_array();
  if (items == nullptr) return "its content is neither a string nor an array";
  for (std::size_t b = 0; b < items->size(); ++b) {
    const auto* block = (*items)[b].if_object();
    const auto* type = block != nullptr ? block->if_contains("type") : nullptr;
    const auto* text = block != nullptr ? block->if_contains("text") : nullptr;
    if (type == nullptr || !type->is_string()) return "content." + std::to_string(b) + " is not a block with a \"type\"";
    if (type->get_string() != "text") return "content." + std::to_string(b) + " has type \"" + std::string(type->get_string()) + "\"";
    if (text == nullptr || !text->is_string()) return "content." + std::to_string(b) + " has no string \"text\"";
  }
  return "";
}

// A valid entry's content as text blocks (`{"type":"text",…},…`), for entries written joined.
std::string entry_text_blocks(const boost::json::value& content) {
  if (content.is_string()) return R"({"type":"text","text":)" + boost::json::serialize(content) + "}";
  std::string blocks;
  for (const auto& block : content.get_array()) {
    if (!blocks.empty()) blocks += ',';
    blocks += boost::json::serialize(block);
  }
  return blocks;
}

Expected<Conversation> Reader::build(InputFormat format, const std::vector<JsonSpan>& spans, std::size_t empty_at,
                                     Sizes fixed) {
  if (spans.empty()) return at(empty_at, "the conversation has no messages", true);
  auto frame = std::make_shared<ConversationFrame>();
  frame->format = format;
  frame->fixed = fixed;
  FrameLayout frame_layout;
  frame_layout.buffer = buffer_;
  frame_layout.fixed_json = fixed_json_;
  frame_layout.prefix = text_.substr(0, spans.front().begin);
  frame_layout.suffix = text_.substr(spans.back().end);
  if (spans.size() >= 2)
    frame_layout.separator = text_.substr(spans[0].end, spans[1].begin - spans[0].end);
  else
    frame_layout.separator = format == InputFormat::jsonl ? "\n" : ",";

  // Every message's problems, one located line each, not just the first.
  std::string problems = std::move(fixed_problems_);
  auto problem = [&](std::size_t i, std::string_view what) {
    problems += (problems.empty() ? "" : "\n") + at(spans[i].begin, "messages." + std::to_string(i) + ": " + std::string(what), false).message;
  };
  // Each element's value (parsed during the scan, or now), so a system entry is known before its
  // neighbours are read.
  std::vector<boost::json::value> values(spans.size());
  std::vector<bool> fast(spans.size(), false);  // the value came from the scan's fast parser
  // Each element's role, copied: values[i] is moved into its message as it is read, so a view
  // into it would dangle when a later element looks back (found by the scanner fuzzer).
  enum class RoleSeen : char { other, user, system };
  std::vector<RoleSeen> roles(spans.size(), RoleSeen::other);
  std::size_t next_parsed = 0;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    while (next_parsed < parsed_.size() && parsed_[next_parsed].begin < spans[i].begin) ++next_parsed;
    if (next_parsed < parsed_.size() && parsed_[next_parsed].begin == spans[i].begin) {
      values[i] = std::move(parsed_[next_parsed++].value);
      fast[i] = true;
    } else {
      boost::json::parse_options po;
      po.max_depth = 100000;  // depth was enforced by the scanner
      boost::system::error_code ec;
      values[i] = boost::json::parse(text_.substr(spans[i].begin, spans[i].end - spans[i].begin), ec, {}, po);
      if (ec) values[i] = nullptr;
    }
    const auto* object = values[i].if_object();
    const auto* role = object != nullptr ? object->if_contains("role") : nullptr;
    if (role != nullptr && role->is_string())
      roles[i] = role->get_string() == "system" ? RoleSeen::system : role->get_string() == "user" ? RoleSeen::user : RoleSeen::other;
  }
  auto is_system = [&](std::size_t i) { return roles[i] == RoleSeen::system; };

  std::vector<MessagePtr> messages;
  messages.reserve(spans.size());
  // The message read at each element (null for a system entry or a refused message).
  std::vector<const Message*> at_element(spans.size(), nullptr);
  for (std::size_t i = 0; i < spans.size(); ++i) {
    std::string_view raw = text_.substr(spans[i].begin, spans[i].end - spans[i].begin);
    if (is_system(i)) {
      // Claude Code's mid-conversation system text: kept beside the messages, where the
      // Messages API accepts it (its rules, named in each refusal).
      if (i == 0) problem(i, "a system entry is never the first message (rule: never first)");
      else if (is_system(i - 1)) problem(i, "a system entry never follows another system entry (rule: never adjacent)");
      else if (const Message* prev = at_element[i - 1]; prev != nullptr && !ConversationHost::system_entry_may_follow(*prev))
        problem(i, "a system entry must follow a user message (or an assistant message that ends in a server tool "
                   "use), got an assistant message (rule: after a user turn)");
      if (i + 1 < spans.size() && roles[i + 1] == RoleSeen::user)
        problem(i, "a system entry must be the last message or be followed by an assistant message, got a user "
                   "message (rule: before an assistant turn)");
      const boost::json::value* content = values[i].get_object().if_contains("content");
      const std::string bad = entry_content_problem(content);
      if (!bad.empty()) problem(i, "a system entry's content is a string or text blocks only, but " + bad + " (rule: text only)");
      // Its content as text blocks, should it ever share a slot with another entry.
      std::string blocks = bad.empty() ? entry_text_blocks(*content) : std::string();
      frame->system_entries.push_back(SystemEntry{raw, messages.size(), std::move(blocks)});
      frame->fixed += span_sizes(raw);
      frame_layout.fixed_json.push_back(raw);
      continue;
    }
    auto message = fast[i] ? ConversationHost::message_from_input(buffer_, raw, std::move(values[i])) : ConversationHost::message_from_input(buffer_, raw);
    if (message) {
      at_element[i] = message.value().get();
      messages.push_back(std::move(message.value()));
      continue;
    }
    std::string_view lines = message.error().message;
    while (!lines.empty()) {
      std::size_t end = std::min(lines.find('\n'), lines.size());
      problem(i, lines.substr(0, end));
      lines.remove_prefix(std::min(end + 1, lines.size()));
    }
  }
  if (!problems.empty()) return Error{problems};
  if (messages.empty()) return at(empty_at, "the conversation has no messages besides system entries", true);
  frame_layout.original = messages;
  ConversationHost::set_layout(*frame, std::move(frame_layout));
  return ConversationHost::make(std::move(frame), std::move(messages));
}

}  // namespace

Expected<Conversation> read_conversation(std::string bytes, const ReadOptions& options) {
  return Reader(std::move(bytes), options).read();
}

namespace {

std::string_view file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string over_limit(const std::string& name, std::uint64_t limit) {
  return name + ": larger than the input limit of " + std::to_string(limit) + " bytes (" + kInputLimitVariable +
         " raises it)";
}

}  // namespace

Expected<std::uint64_t> input_size_limit() {
  const char* text = std::getenv(kInputLimitVariable);
  if (text == nullptr || *text == '\0') return kDefaultInputLimit;
  std::uint64_t limit = 0;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, limit);
  if (ec != std::errc() || ptr != end || limit == 0)
    return Error{std::string(kInputLimitVariable) + ": expected a positive number of bytes, got \"" + text + "\""};
  return limit;
}

Expected<std::string> read_input_bytes(const std::string& path) {
  auto limit = input_size_limit();
  if (!limit) return limit.error();
  bool is_stdin = path == "-";
  std::string name = is_stdin ? "<stdin>" : path;
  // Opened without blocking, so a FIFO with no writer is refused rather than waited on.
  int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return Error{path + ": cannot read: " + std::strerror(errno)};
  struct Closer {
    int fd;
    bool owned;
    ~Closer() {
      if (owned) ::close(fd);
    }
  } closer{fd, !is_stdin};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error{name + ": cannot read: " + std::strerror(errno)};
  // Stdin may be a pipe or a terminal (an endless one stops at the limit); a named input must be
  // a regular file: a directory, a FIFO or /dev/zero is not a conversation.
  if (S_ISDIR(st.st_mode) || (!is_stdin && !S_ISREG(st.st_mode)))
    return Error{name + ": is " + std::string(file_kind(st.st_mode)) + ", not a regular file; give a file, or - for stdin"};
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > *limit) return Error{over_limit(name, *limit)};
  if (!is_stdin) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);

  // A file's size is known: one allocation, advised into huge pages when large (a 57 MB input
  // read 3-5x faster that way on the project's VM: 4 KiB page faults were most of the read),
  // filled through a 64 KiB buffer that stays in cache (cheaper than zero-filling the string
  // first). A pipe starts at 1 MiB and grows as the string grows.
  std::string bytes;
  if (S_ISREG(st.st_mode)) {
    bytes.reserve(static_cast<std::size_t>(st.st_size) + 1);
    advise_huge_pages(bytes.data(), bytes.capacity());
  } else {
    bytes.reserve(std::size_t{1} << 20);
  }
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{name + ": read failed: " + std::strerror(errno)};
    }
    if (n == 0) break;
    if (bytes.size() + static_cast<std::size_t>(n) > *limit) return Error{over_limit(name, *limit)};
    bytes.append(chunk, static_cast<std::size_t>(n));
  }
  return bytes;
}

Expected<Conversation> read_conversation_file(const std::string& path, ReadOptions options) {
  if (options.source == "<input>") options.source = path == "-" ? "<stdin>" : path;
  auto bytes = read_input_bytes(path);
  if (!bytes) return bytes.error();
  return read_conversation(std::move(bytes).value(), options);
}

}  // namespace compactor
