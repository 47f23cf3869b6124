// Both importers on any bytes: never a crash, and whatever they import is a history the API
// accepts (structure, pairing, unique ids), with every repair counted.
#include "loader/builtin_checkers.hpp"
#include "import/importers.hpp"
#include "wire/anthropic/claude_code_log.hpp"
#include "wire/openai_chat/openai_log.hpp"
#include "compactor/protected_tail.hpp"
#include "fuzz_check.hpp"

#include <cstdint>

namespace {

void check_imported(const compactor::ImportResult& r, const char* importer) {
  if (!r.conversation) return;
  std::vector<compactor::CheckerPtr> checkers;
  for (const char* name : {"structure", "pairing", "unique_ids"}) checkers.push_back(compactor::make_builtin_checker(name));
  const compactor::Conversation& c = *r.conversation;
  auto violations = compactor::run_checkers(checkers, compactor::CheckInput{c, c, compactor::compute_protected_tail(c, 0), {}});
  FUZZ_CHECK(violations.empty(), std::string(importer) + " imported a history the API refuses: " + violations.front().to_string());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_imported(compactor::import_claude_code(bytes, "fuzz.jsonl", false), "the Claude Code importer");
  if (auto openai = compactor::import_openai(bytes, "fuzz.json")) check_imported(*openai, "the OpenAI importer");
  return 0;
}
