// The scanner, and Boost.JSON as its differential oracle: whatever the scanner accepts as JSON,
// Boost.JSON accepts too (the scanner refuses more: duplicate keys, lone surrogates, depth over
// 256), and reading the bytes as a conversation never crashes. The one-pass ValueParser (what
// the reader parses messages with) accepts nothing the scanner refuses, ends where it ends and
// builds the value Boost.JSON parses from the same bytes. find_value_span, on any bytes, stays
// inside them.
#include "model/conversation_reader.hpp"
#include "fuzz_check.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  compactor::detail::JsonScanner scanner(text, 256);
  compactor::detail::ScannedDocument doc;
  bool ours = scanner.scan_document(0, doc) && scanner.skip_whitespace(doc.span.end) == text.size();
  if (ours) {
    boost::json::parse_options options;
    options.max_depth = 1024;
    boost::json::error_code ec;
    boost::json::monotonic_resource resource;
    boost::json::parse(text, ec, &resource, options);
    FUZZ_CHECK(!ec, "the scanner accepted what Boost.JSON refuses: " + ec.message());
  }
  // A key looked for before any parse (an adapter's): on any bytes, nothing read outside them.
  if (auto span = compactor::detail::find_value_span(text, {{"input"}, {"", 1}, {"id"}}))
    FUZZ_CHECK(span->begin <= span->end && span->end <= text.size(), "a span outside the bytes");
  compactor::detail::ValueParser fast(text);
  std::size_t fast_end = 0;
  std::size_t start = scanner.skip_whitespace(0);
  if (fast.parse(start, 256, fast_end)) {
    compactor::detail::ScannedDocument again;
    compactor::detail::JsonScanner check(text, 256);
    FUZZ_CHECK(check.scan_document(start, again), "the one-pass parser accepted what the scanner refuses: " + check.error().what);
    FUZZ_CHECK(again.span.end == fast_end, "the one-pass parser ended elsewhere than the scanner");
    boost::json::parse_options options;
    options.max_depth = 1024;
    boost::json::error_code ec;
    boost::json::value oracle = boost::json::parse(text.substr(start, fast_end - start), ec, {}, options);
    // Boost.JSON may refuse what both accept (an exponent it cannot hold): the reader then
    // reports Boost.JSON's refusal, as it always did.
    if (!ec) FUZZ_CHECK(fast.take() == oracle, "the one-pass parser built another value than Boost.JSON parses");
  }
  auto conversation = compactor::read_conversation(std::string(text));
  if (!conversation) FUZZ_CHECK(!conversation.error().message.empty(), "a refusal without a message");
  return 0;
}
