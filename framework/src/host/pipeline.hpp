// The host's loop: the input is checked; then for each stage, its `when`
// is evaluated, it runs on the committed conversation, every enabled checker looks at its
// candidate, and the candidate is committed or rejected (`on_violation: abort | skip`), the
// conversation staying as it was on a reject or decline; last, the final budget check.
#pragma once

#include "compactor/checker.hpp"
#include "archive/file_system.hpp"
#include "archive/run_archive.hpp"
#include "host/cost_gate.hpp"
#include "host/pipeline_config.hpp"
#include "host/run_report.hpp"
#include "compactor/summarizer.hpp"
#include "summarizer/background_summaries.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace compactor {

struct RunOptions {
  bool prompt_too_long = false;        // run `on_prompt_too_long` instead of `pipeline`
  std::optional<std::string> request;  // the active request; found in the conversation if unset
  std::string input_name;              // for the report
  FileSystem* file_system = nullptr;   // the archive's file system (tests inject faults); real if null
  std::optional<std::string> archive_dir;  // instead of the config's (benchmarks archive to scratch)
  // The run's archive, when not the archive folder (a store beyond this machine, a tenant's
  // namespace: store/store.hpp); given the file system above.
  std::function<std::unique_ptr<RunArchive>(FileSystem&)> open_archive;
  // Called around every stage that runs (not a skipped one), so a supervisor knows which stage
  // and plugin to blame if the process dies or hangs (host/child_run.hpp).
  std::function<void(const std::string& stage, const std::string& plugin_file)> on_stage_start;
  std::function<void()> on_stage_end;
  // The API's rules for the history (a wire format's checkers): the input must pass them, and
  // they run after every stage beside the config's checkers (one of the same name runs once).
  // The Anthropic Messages API's when unset: structure, pairing, unique_ids, cache_control.
  const std::vector<CheckerPtr>* rules = nullptr;
  // The request's model id (empty: it names none, and the price table's default model stands for
  // it): the window of `budget: {window: auto}`, the meter of `meter: {kind: auto}`, the price the
  // cost gate weighs with. `openai`: the API counts its models' tokens with OpenAI's tokenizer
  // (WireFormat::openai_tokenizer).
  std::string model;
  bool openai = false;
  // What the provider's prompt cache holds of the input, as the caller knows it (serve from its
  // continuity state, bench from the previous call); unknown: cold, and the gate commits.
  std::optional<CacheState> cache;
  // The client's whole history, when the input continues one sent before in its place (serve's
  // continuity state): measured too, so that what a call saved is against what the client sent.
  const Conversation* received = nullptr;
  // Why the over-budget stages defer to the API (WireFormat::native_context): the request asks the
  // API to make room itself. Empty: they run.
  std::string native_context;
  // Where model summaries are kept and started in the background (serve's worker), when the
  // config's summarizer.mode is background; null: the summarizer is called inline.
  BackgroundSummaries* background_summaries = nullptr;
};

class Pipeline {
 public:
  // Creates every stage, checker and summarizer (guarded calls into plugin code). An error names
  // it and its file; `failure`, when given, says which exit it calls for: kExitBadInput when a
  // factory refused its params (the config is wrong for it), kExitPluginError when a plugin failed.
  static Expected<Pipeline> build(PipelineConfig config, ExitCode* failure = nullptr);

  // Under `budget.unit: tokens` the input, and every candidate, counts through the config's meter.
  RunReport run(const Conversation& input, const RunOptions& options, StageLogger& log);

  const PipelineConfig& config() const { return *config_; }
  // The configured summarizer (guarded), called inline: serve's background summary job.
  Summarizer* summarizer() const { return summarizer_.get(); }

  // The runs that follow archive for `tenant` (serve's worker, after its fork): the restore
  // instruction they write names its namespace.
  void archive_for_tenant(const std::string& tenant) { restore_phrase_ = restore_phrase(*config_, tenant); }

 private:
  RunReport run_stages(const Conversation& input, const RunOptions& options, StageLogger& log);

  struct BuiltStage {
    const PipelineEntryConfig* entry;
    std::unique_ptr<Stage> instance;
  };
  struct RunState;
  // The cost gate on the run's compaction; `committed` back to the input when it declines.
  void gate(const Conversation& input, Conversation& committed, RunState& run, RunReport& report) const;
  // The summarizer's calls since the last take, priced, into the report.
  void take_summarizer_calls(RunReport& report) const;
  // One stage on `committed`: its report, `committed` replaced when its candidate passed every
  // checker (what it archived otherwise reverted).
  StageRunReport run_stage_on(BuiltStage& s, Conversation& committed, RunState& run) const;

  std::unique_ptr<PipelineConfig> config_;  // stable address: BuiltStage points into it
  std::vector<BuiltStage> pipeline_;
  std::vector<BuiltStage> on_prompt_too_long_;
  std::vector<CheckerPtr> checkers_;
  std::vector<CheckerPtr> default_rules_;
  std::unique_ptr<Summarizer> summarizer_;  // guarded
  std::unique_ptr<Summarizer> stand_in_;    // the extractive one, while a background summary is written
  std::string restore_phrase_;              // StageContext::restore_via, from the config
};

}  // namespace compactor
