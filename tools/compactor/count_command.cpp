// compactor count --input F [--meter KIND]… [--fit F [--family NAME]] [--per-message]: tokens by each meter.
#include "command_line.hpp"
#include "commands.hpp"

#include "host/exit_code.hpp"
#include "meter/meter_kinds.hpp"
#include "model/conversation_host.hpp"
#include "platform/counted.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"(usage: compactor count --input FILE [--input-format F] [--meter KIND]… [--fit FILE [--family NAME]]
                       [--per-message]

Counts a conversation's tokens with each meter (default: chars4, cl100k, o200k, claude-legacy;
calibrated too when --fit is given) and prints one line per meter: the messages' tokens, and
the request body's system and tools apart. A message counts the text of its text and thinking
blocks, a tool_use's name and JSON input, a tool_result's content, any other block's JSON, and
1,600 per image or document; chars4 is the message's JSON chars over 4.

options:
  --input FILE      the conversation ("-" for stdin), in any format `run` reads
@INPUT_FORMAT@
                    how to read it (default auto: detected from its bytes and name):
@INPUT_FORMS@
  --meter KIND      chars4, cl100k, o200k, claude-legacy or calibrated (repeatable)
  --fit FILE        the fit a calibrated meter reads (`compactor calibrate --out`); only with
                    the calibrated meter (given, or the default list's fifth)
  --family NAME     the fit's model family (default: the fit's default_family); only with --fit
  --per-message     print a JSON line per message instead: {"message": N, "role": …, KIND: tokens…},
                    then, for a request body with a system prompt or tools, one line for them:
                    {"fixed": "system and tools", KIND: tokens…}

Exit codes: 0 counted; 2 bad input, unknown meter or missing rank file.
)";

}  // namespace

int count_command(int argc, char** argv) {
  const Command command{"count", with_input_forms(kHelp)};
  int exit_code = kExitOk;
  auto args = command.parse(
      argc, argv, 2, {{"input"}, {"input-format"}, {"meter", true, true}, {"fit"}, {"family"}, {"per-message", false}}, exit_code);
  if (!args) return exit_code;
  std::string error;
  auto input = required_option(*args, "input", error);
  if (!input) return command.usage_error(error);
  if (auto bad = wire::input_format_error(args->get("input-format"))) return command.usage_error(*bad);
  std::vector<std::string> kinds = args->has("meter") ? args->options.at("meter")
                                                      : std::vector<std::string>{"chars4", "cl100k", "o200k", "claude-legacy"};
  if (!args->has("meter") && args->has("fit")) kinds.push_back("calibrated");
  // A fit or family no meter reads would be silently ignored: the count would not be the one asked.
  if (args->has("family") && !args->has("fit")) return command.usage_error("--family names a family of a fit: give --fit too");
  if (args->has("fit") && std::find(kinds.begin(), kinds.end(), "calibrated") == kinds.end())
    return command.usage_error("--fit is read by the calibrated meter only: add --meter calibrated");
  std::vector<std::shared_ptr<const Meter>> meters;
  for (const std::string& kind : kinds) {
    auto meter = make_meter(MeterSpec{kind, kind == "calibrated" ? args->get("fit").value_or("") : "", args->get("family").value_or("")});
    if (!meter) {
      fmt::print(stderr, "compactor count: --meter {}: {}\n", kind, meter.error().message);
      return kExitBadInput;
    }
    meters.push_back(std::move(*meter));
  }
  auto doc = read_input(*input, args->get("input-format"));
  if (!doc) {
    fmt::print(stderr, "{}\n", doc.error().message);
    return kExitBadInput;
  }
  const Conversation* conversation = &doc->request->conversation();
  // What the request counts besides its messages, named as the summary names it.
  const std::string_view fixed_part = ConversationHost::layout(conversation->frame()).fixed_json.empty() ? ""
                                      : conversation->frame().system_entries.empty() ? "system and tools"
                                                                                     : "system, tools and system entries";
  if (args->has("per-message")) {
    for (std::size_t i = 0; i < conversation->size(); ++i) {
      boost::json::object line{{"message", i}, {"role", to_string((*conversation)[i].role())}};
      for (std::size_t k = 0; k < meters.size(); ++k) line[kinds[k]] = meters[k]->tokens((*conversation)[i]);
      fmt::print("{}\n", boost::json::serialize(line));
    }
    if (!fixed_part.empty()) {
      boost::json::object line{{"fixed", fixed_part}};
      for (std::size_t k = 0; k < meters.size(); ++k) line[kinds[k]] = ConversationHost::with_meter(*conversation, meters[k]).frame().fixed.tokens;
      fmt::print("{}\n", boost::json::serialize(line));
    }
    return kExitOk;
  }
  std::string source = *input == "-" ? "<stdin>" : *input;
  fmt::print("{}: {}, {} chars\n", source, counted(conversation->size(), "message", "messages"), conversation->sizes().chars);
  for (std::size_t k = 0; k < meters.size(); ++k) {
    Conversation metered = ConversationHost::with_meter(*conversation, meters[k]);
    std::uint64_t fixed = metered.frame().fixed.tokens;
    const std::uint64_t tokens = metered.sizes().tokens - fixed;
    fmt::print("  {:<14} {:>10} {}{}\n", kinds[k], tokens, tokens == 1 ? "token" : "tokens",
               fixed_part.empty() ? "" : fmt::format(" + {} in {}", fixed, fixed_part));
  }
  return kExitOk;
}

}  // namespace compactor::cli
