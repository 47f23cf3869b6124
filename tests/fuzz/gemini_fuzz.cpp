// The Gemini adapter's reader on any bytes: never a crash; a body it reads is written back
// byte for byte when nothing changed; with its first Content dropped, and with its last one
// replaced by a summary the pipeline built (a user text turn), it writes a body the adapter
// reads again, with the Contents it should have and the summary as a user text turn; the API's
// rules run on what it read without a crash.
#include "wire/gemini/gemini.hpp"

#include "compactor/protected_tail.hpp"
#include "fuzz_check.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>

#include <cstdint>

namespace {

namespace json = boost::json;

std::size_t contents_in(const std::string& body) {
  boost::system::error_code ec;
  json::value v = compactor::detail::parse_json(body, ec);
  FUZZ_CHECK(!ec && v.is_object() && v.get_object().contains("contents"), "a written body is not JSON with contents: " + body.substr(0, 200));
  return v.at("contents").as_array().size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const compactor::wire::WireFormat& gemini = compactor::wire::gemini();
  auto read = gemini.read(bytes, "fuzz.json");
  if (!read) return 0;
  const compactor::Conversation& c = (*read)->conversation();
  (void)(*read)->pass_reason();

  auto same = (*read)->write(c);
  FUZZ_CHECK(same && *same == bytes, "a body with nothing changed was not written back as it came");

  for (const compactor::CheckerPtr& rule : gemini.rules()) {
    std::vector<compactor::Violation> out;
    rule->check(compactor::CheckInput{c, c, compactor::compute_protected_tail(c, 0), {}}, out);
  }

  std::vector<compactor::MessagePtr> messages = c.messages();
  if (messages.size() >= 2) {
    std::vector<compactor::MessagePtr> rest(messages.begin() + 1, messages.end());
    auto dropped = (*read)->write(c.with_messages(rest));
    FUZZ_CHECK(dropped.ok(), "dropping the first Content could not be written: " + (dropped ? std::string() : dropped.error().message));
    FUZZ_CHECK(contents_in(*dropped) == rest.size(), "dropping the first Content wrote another count");
    FUZZ_CHECK(gemini.read(*dropped, "dropped.json").ok(), "a body with its first Content dropped does not read again");
  }

  auto summary = compactor::Message::from_json(json::object{
      {"role", "user"}, {"content", json::array{json::object{{"type", "text"}, {"text", "[compactor summary] what came before \u00e9"}}}}});
  FUZZ_CHECK(summary.ok(), "the summary message");
  messages.back() = *summary;
  auto replaced = (*read)->write(c.with_messages(messages));
  FUZZ_CHECK(replaced.ok(), "a summary could not be written: " + (replaced ? std::string() : replaced.error().message));
  FUZZ_CHECK(contents_in(*replaced) == messages.size(), "the summary changed the count of Contents");
  auto again = gemini.read(*replaced, "replaced.json");
  FUZZ_CHECK(again.ok(), "a body with a summary does not read again: " + (again ? std::string() : again.error().message));
  const compactor::Message& last = (*again)->conversation()[messages.size() - 1];
  FUZZ_CHECK(last.role() == compactor::Role::user && last.text() == "[compactor summary] what came before \u00e9",
             "the summary is not a user text turn");
  return 0;
}
