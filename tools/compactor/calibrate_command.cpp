// compactor calibrate --corpus DIR [--out F] [--report F] [--base KIND]
// Fits the calibrated meter to the prompt sizes Claude Code recorded, and measures every meter
// (calibrate/calibration.hpp).
#include "command_line.hpp"
#include "commands.hpp"

#include "calibrate/calibration.hpp"
#include "host/atomic_file.hpp"
#include "host/exit_code.hpp"

#include <fmt/core.h>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"(usage: compactor calibrate --corpus DIR [--out FILE] [--report FILE] [--base KIND]

Reads every Claude Code session log (*.jsonl) below DIR and, for every API call it recorded,
compares the prompt size the API reported (usage: input + cache read + cache creation tokens)
with what each meter counts for the messages before that call.

  - Usage is taken once per message.id; <synthetic> lines (no API call) are dropped.
  - A call is left out when a line before it was skipped as broken or repaired by the import,
    when it follows a compaction, or when its response does not start a message of the chain.
  - The fixed part of a prompt (system prompt and tools, not in the log) is each session's
    first call per model family: every later call is predicted as that call's reported size
    plus what the meter counts for the messages added since.
  - Sessions are split in two by the FNV-1a hash of their session id: even hashes fit, odd ones
    are held out. The calibrated meter is per model family (opus, sonnet, haiku, …):
      tokens(message) = per_token × BASE(message) + per_message,
    a robust fit over the fitting half, on the steps between a session's consecutive calls:
    Huber-reweighted least squares, then least squares on the steps within 3.5 robust standard
    deviations; the others (a step into context the log does not show) are outliers, counted
    and named by session. The report gives, on the
    held-out half, the median and 90th-percentile relative error of chars4, cl100k, o200k,
    claude-legacy and calibrated.

options:
  --corpus DIR    folder of Claude Code logs (searched recursively; agent-*.jsonl are sub-agent chains)
  --out FILE      write the fit (YAML) a config names as `meter: {kind: calibrated, file: FILE}`
  --report FILE   write the accuracy report (JSON)
  --base KIND     the exact meter the fit scales (default claude-legacy; or cl100k, o200k)

The report's last row, chars4-fit, is the same fit over chars/4: the baseline a fit without an
exact tokenizer reaches.

A fit whose held-out median error is worse than chars4-fit's (by over a quarter of it and 0.1
percentage point) is refused: the reason is printed,
the report says it, and --out is not written.

Prints the accuracy table. Exit codes: 0 done; 1 the fit was refused; 2 bad arguments, no usable
call, or a write failed.
)";

}  // namespace

int calibrate_command(int argc, char** argv) {
  const Command command{"calibrate", kHelp};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2, {{"corpus"}, {"out"}, {"report"}, {"base"}}, exit_code);
  if (!args) return exit_code;
  std::string error;
  auto corpus = required_option(*args, "corpus", error);
  if (!corpus) return command.usage_error(error);
  std::vector<NamedPath> outputs;
  if (auto out = args->get("out")) outputs.push_back({"--out", *out});
  if (auto report = args->get("report")) outputs.push_back({"--report", *report});
  if (auto conflict = overwrite_conflict({}, outputs)) {
    fmt::print(stderr, "compactor calibrate: {}\n", *conflict);
    return kExitBadInput;
  }
  auto calibration = calibrate::calibrate_corpus(*corpus, args->get("base").value_or("claude-legacy"));
  if (!calibration) {
    fmt::print(stderr, "compactor calibrate: {}\n", calibration.error().message);
    return kExitBadInput;
  }
  fmt::print("{}", calibrate::summary_text(*calibration));
  const std::string& refusal = calibration->refusal;
  if (!refusal.empty()) fmt::print(stderr, "compactor calibrate: refused: {}{}\n", refusal, args->get("out") ? "; no fit written" : "");
  if (auto out = args->get("out"); out && refusal.empty()) {
    auto w = write_file_atomically(*out, calibration->fit.to_yaml("written by compactor calibrate --corpus " + *corpus + " (fitting half)"));
    if (!w) {
      fmt::print(stderr, "compactor calibrate: {}\n", w.error().message);
      return kExitBadInput;
    }
  }
  if (auto report = args->get("report")) {
    if (auto w = write_file_atomically(*report, calibrate::report_json(*calibration)); !w) {
      fmt::print(stderr, "compactor calibrate: {}\n", w.error().message);
      return kExitBadInput;
    }
  }
  return refusal.empty() ? kExitOk : kExitNotDone;
}

}  // namespace compactor::cli
