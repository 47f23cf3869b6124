// compactor import --input F [--input-format …] [--output F] [--output-format …] [--report F]
// compactor import --corpus DIR [--report F] [--sidechains include|skip]
#include "command_line.hpp"

#include "wire/carried.hpp"
#include "wire/input_document.hpp"
#include "wire/openai_chat/openai_log.hpp"
#include "commands.hpp"

#include "model/active_request.hpp"
#include "model/conversation_reader.hpp"
#include "host/atomic_file.hpp"
#include "loader/builtin_checkers.hpp"
#include "host/exit_code.hpp"
#include "import/importers.hpp"
#include "platform/counted.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"(usage: compactor import --input FILE [--input-format F]
                        [--output FILE] [--output-format anthropic|openai] [--report FILE]
       compactor import --corpus DIR [--report FILE] [--sidechains include|skip]

Turns a session into Anthropic messages: a Claude Code session log (JSONL: main-chain lines,
split assistant messages merged, tool results merged with results first, rewound branches and
meta lines left out, agent-*.jsonl files imported as their sub-agent chain) or an OpenAI chat
history (tool_calls and role "tool", SWE-agent .traj files; the system message becomes the
request body's system), or a Gemini CLI chat (~/.gemini/tmp/<project hash>/chats/session-*.json
or .jsonl: tool calls and their recorded results as pairs, thoughts left out; docs/gemini.md).
Broken lines are skipped and counted with their line numbers; every
repair (an orphan result dropped, a call whose result was lost answered by an is_error result…)
is counted and listed in the report, never silent. A Codex CLI session file (its rollout JSONL)
is read as the OpenAI Responses request its last call sent, and written as that request body
(docs/openai-responses.md). The result must pass every checker.

@INPUT_FORMAT@
                   how to read it (default auto: detected from its bytes and name):
@INPUT_FORMS@

--output writes the conversation (anthropic: a messages array or a request body; openai: a
messages array); without it only the verdict line is printed. --report writes what was skipped
and repaired, as JSON.

--corpus imports every *.jsonl and *.traj file below DIR, checks each, prints one line per file
and the totals, and exits 2 if any file fails.

exit codes: 0 imported and valid; 2 unreadable, empty, or failing a checker (the conversation is
not written; --report still is: it says why); 3 an output could not be written (nothing was).
)";

// Imports one file and checks it; the line to print, and whether it passed.
struct Checked {
  std::optional<ImportResult> result;
  const wire::WireFormat* format = nullptr;  // whose rules it passed
  bool written_as_read = false;              // the API's own request: written as read
  std::string line;
  bool ok = false;
};

Checked import_and_check(const std::string& path, const std::optional<std::string>& format, bool sidechain) {
  Checked out;
  auto imported = wire::import_session(path, format, sidechain);
  if (!imported) {
    out.line = "FAIL " + imported.error().message;
    return out;
  }
  out.result = std::move(imported->result);
  out.format = imported->format;
  out.written_as_read = imported->written_as_read;
  const ImportReport& r = out.result->report;
  if (!out.result->conversation) {
    out.line = fmt::format("EMPTY {}: no message to import ({}, {} broken)", path, counted(r.lines, "line", "lines"),
                           r.broken_lines.size());
    return out;
  }
  const Conversation& c = *out.result->conversation;
  auto requests = find_active_request(c).texts;
  auto v = run_checkers(checkers_for_check(*out.format), CheckInput{c, c, compute_protected_tail(c, 0), requests});
  if (!v.empty()) {
    out.line = "FAIL " + path + ": " + v.front().to_string();
    return out;
  }
  out.ok = true;
  out.line = "OK " + path + ": " + r.summary_line();
  return out;
}


// Every .jsonl and .traj file under `dir`: one line each, the totals, and the report.
int import_corpus(const std::string& dir, const std::optional<std::string>& format, bool skip_sidechains,
                  const std::optional<std::string>& report_path) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    std::string ext = e.path().extension().string();
    std::string name = e.path().filename().string();
    if (!e.is_regular_file() || (ext != ".jsonl" && ext != ".traj")) continue;
    if (skip_sidechains && name.rfind("agent-", 0) == 0) continue;
    files.push_back(e.path().string());
  }
  if (ec || files.empty()) {
    fmt::print(stderr, "compactor import: {}: no .jsonl or .traj files{}\n", dir, ec ? " (" + ec.message() + ")" : "");
    return kExitBadInput;
  }
  std::sort(files.begin(), files.end());
  std::size_t imported = 0, empty = 0, failed = 0, broken = 0, repairs = 0, messages = 0, tool_uses = 0;
  std::string report = "[\n";
  for (const auto& f : files) {
    Checked c = import_and_check(f, format, false);
    fmt::print("{}\n", c.line);
    if (c.result) {
      const ImportReport& r = c.result->report;
      broken += r.broken_lines.size();
      repairs += r.repairs.size();
      messages += r.messages;
      tool_uses += r.tool_uses;
      report += (imported + empty + failed ? ",\n" : "") + r.to_json();
    }
    if (c.ok) ++imported;
    else if (c.result && !c.result->conversation) ++empty;
    else ++failed;
  }
  fmt::print("total: {}, {} imported, {} empty, {} failed; {}, {}, {} skipped, {}\n", counted(files.size(), "file", "files"),
             imported, empty, failed, counted(messages, "message", "messages"), counted(tool_uses, "tool_use", "tool_uses"),
             counted(broken, "broken line", "broken lines"), counted(repairs, "repair", "repairs"));
  if (auto path = report_path) {
    auto w = write_file_atomically(*path, report + "\n]\n");
    if (!w) {
      fmt::print(stderr, "compactor import: {}\n", w.error().message);
      return kExitPluginError;
    }
  }
  return failed ? kExitBadInput : kExitOk;
}

int import_one(const ParsedArgs& args, const std::optional<std::string>& format, const std::string& output_format);

}  // namespace

int import_command(int argc, char** argv) {
  const Command command{"import", with_input_forms(kHelp, wire::FormUse::sessions)};
  int exit_code = kExitOk;
  auto args = command.parse(
      argc, argv, 2,
      {{"input"}, {"input-format"}, {"output"}, {"output-format"}, {"report"}, {"corpus"}, {"sidechains"}}, exit_code);
  if (!args) return exit_code;
  std::string error;
  const std::optional<std::string> format = args->get("input-format");
  if (auto bad = wire::input_format_error(format, wire::FormUse::sessions)) error = *bad;
  if (!args->positional.empty()) error = "unexpected argument " + args->positional.front();
  if (!args->get("input") == !args->get("corpus")) error = "give --input FILE or --corpus DIR";
  std::string output_format = args->get("output-format").value_or("anthropic");
  if (output_format != "anthropic" && output_format != "openai") error = "--output-format takes anthropic or openai";
  bool skip_sidechains = args->get("sidechains") == std::optional<std::string>("skip");
  if (!error.empty()) return command.usage_error(error);

  if (auto dir = args->get("corpus")) return import_corpus(*dir, format, skip_sidechains, args->get("report"));
  return import_one(*args, format, output_format);
}

namespace {

// What leaving out another API's carried data broke (a message that held nothing else is left
// empty): the Messages API's rule, or nothing.
std::optional<std::string> refusal_in_anthropic_form(const std::string& bytes, const std::map<std::string, std::size_t>& left_out,
                                                     const std::string& output_format) {
  if (output_format != "anthropic" || left_out.empty()) return std::nullopt;
  auto read = read_conversation(bytes);
  if (!read) return "without it, " + read.error().message;
  auto v = run_checkers(make_input_checkers(), CheckInput{*read, *read, compute_protected_tail(*read, 0), {}});
  if (v.empty()) return std::nullopt;
  return "without it, " + v.front().to_string();
}

// One file: the conversation (--output), the report (--report), the verdict line.
int import_one(const ParsedArgs& args_ref, const std::optional<std::string>& format, const std::string& output_format) {
  const ParsedArgs* args = &args_ref;
  std::vector<NamedPath> outputs;
  if (auto path = args->get("output")) outputs.push_back({"--output", *path});
  if (auto path = args->get("report")) outputs.push_back({"--report", *path});
  if (auto conflict = overwrite_conflict({{"the input", *args->get("input")}}, outputs)) {
    fmt::print(stderr, "compactor import: {}\n", *conflict);
    return kExitBadInput;
  }
  Checked c = import_and_check(*args->get("input"), format, false);
  bool stdout_taken = args->get("output") == std::optional<std::string>("-") || args->get("report") == std::optional<std::string>("-");
  // The report is written whenever there is one; the conversation only when it passed. Both are
  // written before either replaces its target.
  std::string report_bytes, conversation_bytes, left_out_line;
  std::vector<FileWrite> files;
  if (c.result) {
    if (auto path = args->get("report")) {
      report_bytes = c.result->report.to_json() + "\n";
      files.push_back({*path, report_bytes});
    }
  }
  if (c.ok) {
    if (auto path = args->get("output")) {
      const Conversation& conversation = *c.result->conversation;
      std::map<std::string, std::size_t> left_out;
      conversation_bytes = output_format == "openai"                   ? export_openai(conversation, &left_out)
                           : c.written_as_read                         ? conversation.serialize()
                                                                       : wire::without_carried(conversation, left_out);
      // Said, never silent, once the output is written: what the output's form has no place for.
      std::string what_left;
      for (const auto& [what, n] : left_out) what_left += fmt::format("{}{} ({})", what_left.empty() ? "" : ", ", what, n);
      if (auto refused = refusal_in_anthropic_form(conversation_bytes, left_out, output_format)) {
        c.ok = false;  // nothing is written: the line says what was left out and what that broke
        c.line = fmt::format("FAIL {}: the Anthropic form has no place for {}; {}", *args->get("input"), what_left, *refused);
      } else {
        files.insert(files.begin(), FileWrite{*path, conversation_bytes});
        if (!what_left.empty())
          left_out_line = fmt::format("compactor import: the {} form has no place for {}; left out of {}",
                                      output_format == "openai" ? "OpenAI" : "Anthropic", what_left,
                                      *path == "-" ? std::string("the output") : *path);
      }
    }
  }
  // The verdict is printed once the outputs are in place: an "OK" is never followed by a failure.
  if (auto w = write_files_atomically(files); !w) {
    fmt::print(stderr, "compactor import: {}\n", w.error().message);
    return kExitPluginError;
  }
  if (!left_out_line.empty()) fmt::print(stderr, "{}\n", left_out_line);
  fmt::print(stdout_taken ? stderr : stdout, "{}\n", c.line);
  if (!c.ok) return kExitBadInput;
  return kExitOk;
}

}  // namespace

}  // namespace compactor::cli
