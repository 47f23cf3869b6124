// compactor check --input F: is this a history the API accepts?
#include "command_line.hpp"
#include "commands.hpp"

#include "model/active_request.hpp"
#include "loader/builtin_checkers.hpp"
#include "model/conversation_reader.hpp"
#include "import/importers.hpp"
#include "host/exit_code.hpp"
#include "platform/counted.hpp"

#include <fmt/core.h>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"(usage: compactor check --input FILE [--request TEXT]

Checks a conversation (messages array, request body or JSONL; FILE may be - for stdin) against
every checker: structure, pairing, unique_ids and the others. Prints one summary line and exits 0
when the API would accept it; prints one line per violation (what and where: messages.N, ids, or
byte offset and line:col for syntax errors) on stderr and exits 2 when not. The input is only read.

options:
  --input FILE     the conversation to check ("-" for stdin)
@INPUT_FORMAT@
                   how to read it (default auto: detected from its bytes and name): an API's
                   request body (or messages or items array), checked against that API's rules,
                   or a log, imported first as `compactor import` does:
@INPUT_FORMS@
  --request TEXT   the active request (default: the newest user text that is not a tool result,
                   a command echo or an interruption notice)
)";

constexpr std::size_t kMaxLines = 20;

}  // namespace

int check_command(int argc, char** argv) {
  const Command command{"check", with_input_forms(kHelp)};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2, {{"input"}, {"request"}, {"input-format"}}, exit_code);
  if (!args) return exit_code;
  std::string error;
  auto input = required_option(*args, "input", error);
  if (!input) return command.usage_error(error);
  if (auto bad = wire::input_format_error(args->get("input-format"))) return command.usage_error(*bad);

  auto doc = read_input(*input, args->get("input-format"));
  if (!doc) {
    fmt::print(stderr, "{}\n", doc.error().message);
    return kExitBadInput;
  }
  const Conversation& c = doc->request->conversation();
  std::vector<std::string> requests =
      args->get("request") ? std::vector<std::string>{*args->get("request")} : find_active_request(c).texts;
  CheckInput check_input{c, c, compute_protected_tail(c, 0), requests};
  auto violations = run_checkers(checkers_for_check(*doc->format), check_input);
  std::string source = *input == "-" ? "<stdin>" : *input;
  if (!violations.empty()) {
    for (std::size_t i = 0; i < violations.size() && i < kMaxLines; ++i)
      fmt::print(stderr, "{}: {}\n", source, violations[i].to_string());
    if (violations.size() > kMaxLines)
      fmt::print(stderr, "{}: … and {} more violations\n", source, violations.size() - kMaxLines);
    return kExitBadInput;
  }

  std::size_t pairs = 0, users = 0;
  for (const MessagePtr& m : c.messages()) {
    users += m->role() == Role::user;
    for (const Block& b : m->blocks()) pairs += b.kind() == BlockKind::tool_use;
  }
  const std::size_t entries = c.system_slots().size();
  std::string with_entries = entries == 0 ? "" : fmt::format(" and {} system entr{}", entries, entries == 1 ? "y" : "ies");
  fmt::print("OK {}: {} ({} user, {} assistant){}, {}, {} chars, {} bytes ({})\n", source, counted(c.size(), "message", "messages"),
             users, c.size() - users, with_entries, counted(pairs, "tool pair", "tool pairs"), c.sizes().chars, c.sizes().bytes,
             to_string(c.format()));
  return kExitOk;
}

}  // namespace compactor::cli
