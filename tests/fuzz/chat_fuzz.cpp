// The Chat Completions adapter on any bytes: never a crash; whatever it reads, written back
// untouched is the same request (the same messages as JSON values, everything else the client's
// bytes), and reading that again gives the same conversation, carried data included.
#include "wire/openai_chat/openai_chat.hpp"

#include "fuzz_check.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto read = compactor::wire::openai_chat().read(bytes, "fuzz.json");
  if (!read) return 0;
  const compactor::Conversation& c = (*read)->conversation();
  auto written = (*read)->write(c);
  FUZZ_CHECK(written.ok(), "an untouched request could not be written back: " + written.error().message);
  boost::system::error_code a, b;
  const boost::json::value before = compactor::detail::parse_json(bytes, a), after = compactor::detail::parse_json(*written, b);
  FUZZ_CHECK(!b, "the request written back is not JSON");
  const bool bare = before.is_array();
  const boost::json::value& was = bare ? before : before.as_object().at("messages");
  const boost::json::value& now = bare ? after : after.as_object().at("messages");
  FUZZ_CHECK(was == now, "the messages written back differ from the client's");
  auto again = compactor::wire::openai_chat().read(*written, "fuzz.json");
  FUZZ_CHECK(again.ok(), "the request written back cannot be read again");
  const compactor::Conversation& d = (*again)->conversation();
  FUZZ_CHECK(c.size() == d.size(), "reading it again gave another number of messages");
  for (std::size_t i = 0; i < c.size(); ++i) FUZZ_CHECK(c[i].raw() == d[i].raw(), "reading it again gave another message");
  return 0;
}
