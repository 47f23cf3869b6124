// The scanner, and Boost.JSON as its differential oracle: whatever the scanner accepts as JSON,
// Boost.JSON accepts too (the scanner refuses more: duplicate keys, lone surrogates, depth over
// 256), and reading the bytes as a conversation never crashes.
#include "compactor/conversation_reader.hpp"
#include "fuzz_check.hpp"
#include "json_scanner.hpp"

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
  auto conversation = compactor::read_conversation(std::string(text));
  if (!conversation) FUZZ_CHECK(!conversation.error().message.empty(), "a refusal without a message");
  return 0;
}
