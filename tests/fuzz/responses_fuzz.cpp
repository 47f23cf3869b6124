// The Responses reader on any bytes, as a request body and as a Codex session file: never a
// crash; a body it reads is written back byte for byte when nothing changed, and a history it
// reads passes its own reading of the API's rules or is refused by them with a named rule
// (never a checker that throws or a rule without a name).
#include "wire/openai_responses/openai_responses.hpp"

#include "loader/builtin_checkers.hpp"
#include "compactor/protected_tail.hpp"
#include "fuzz_check.hpp"
#include "wire/openai_responses/codex_session.hpp"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const compactor::wire::WireFormat& format = compactor::wire::openai_responses();
  if (auto read = format.read(bytes, "fuzz.json")) {
    const compactor::Conversation& c = (*read)->conversation();
    auto written = (*read)->write(c);
    FUZZ_CHECK(static_cast<bool>(written), "an unchanged history could not be written back: " + written.error().message);
    FUZZ_CHECK(*written == bytes, "an unchanged history was not written back byte for byte");
    auto rules = format.rules();
    for (const auto& v : compactor::run_checkers(rules, compactor::CheckInput{c, c, compactor::compute_protected_tail(c, 0), {}}))
      FUZZ_CHECK(!v.checker.empty(), "a violation without its rule's name: " + v.what);
  }
  (void)format.passed_through(bytes);
  if (auto session = compactor::import_codex_session(bytes, "fuzz.jsonl"); session && session->conversation)
    FUZZ_CHECK(session->message_lines.size() == session->conversation->size(), "a message without the line it came from");
  return 0;
}
