// The test kit for stage, summarizer and checker authors (`compactor::testkit`, GoogleTest):
// builders for conversations (thinking and multi-block turns included), a stage, a whole pipeline
// and a summarizer run through the real host (its param validation, checkers, archive and commit
// rules), the outcome as enums, and golden comparison. Link it in your tests, beside
// compactor::framework.
#pragma once

#include "compactor/checker.hpp"
#include "compactor/conversation.hpp"
#include "compactor/meter.hpp"
#include "compactor/param_schema.hpp"
#include "compactor/stage.hpp"
#include "compactor/summarizer.hpp"

#include <gtest/gtest.h>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::testkit {

// ---- conversations -------------------------------------------------------------------------

// Content blocks, for the turns of several blocks (user_turn, assistant_turn).
boost::json::object text(std::string text);
boost::json::object thinking(std::string thinking, std::string signature);
boost::json::object redacted_thinking(std::string data);
boost::json::object tool_use(std::string id, std::string name, boost::json::object input);
// `content` a string, or a list of blocks (text, image).
boost::json::object tool_result(std::string tool_use_id, boost::json::value content, bool is_error = false);
boost::json::object image(std::string media_type, std::string base64_data);

// Builds a conversation message by message, each validated as the host would read it (a message
// the model would not accept throws std::invalid_argument with the reason).
class ConversationBuilder {
 public:
  ConversationBuilder& user(std::string text);
  ConversationBuilder& assistant(std::string text);
  // A turn of several blocks: `assistant_turn({thinking("…", "sig"), text("…"), tool_use(…)})`.
  ConversationBuilder& user_turn(std::vector<boost::json::object> blocks);
  ConversationBuilder& assistant_turn(std::vector<boost::json::object> blocks);
  // An assistant turn calling tool `name` (id `id`), then the user message with its result.
  ConversationBuilder& tool_call(std::string id, std::string name, boost::json::object input, std::string result,
                                 bool is_error = false);
  // Any message, as JSON.
  ConversationBuilder& message(boost::json::object json);
  // As a request body with `system` and `tools` (what `compactor run` reads from an agent's call),
  // or a bare messages array when neither is given.
  ConversationBuilder& system(std::string text);
  ConversationBuilder& tool(std::string name, std::string description);
  Conversation build() const;

 private:
  std::vector<boost::json::object> messages_;
  std::string system_;
  std::vector<boost::json::object> tools_;
};

// A conversation from a file or text the way `compactor run` reads it (messages array, request
// body or JSONL); throws std::runtime_error naming the place when it cannot be read.
Conversation read_conversation_file(const std::string& path);
Conversation read_conversation(const std::string& text);

// ---- meters ----------------------------------------------------------------------------------

// One of the host's meters, as a config's `meter:` names it: chars4, cl100k, o200k, claude-legacy,
// or calibrated with its fit file (and a family of it; empty: the fit's default). Rank files come
// from the meter data of the tree or prefix the test kit was built against (the package's
// COMPACTOR_METER_DIR), as `compactor run` finds them. A meter is made once per process: equal
// meters are one meter, so every test that asks for it counts with the same one, and its counts
// stay cached in the messages it counted. Throws std::runtime_error with the host's line when it
// cannot be made (an unknown kind, a missing rank file).
std::shared_ptr<const Meter> meter(const std::string& kind, const std::string& fit_file = "", const std::string& family = "");

// `conversation` counting tokens with `meter`: what a stage sees under `budget.unit: tokens`
// (Conversation::size_of and size_in in tokens; without a meter they are chars / 4).
Conversation metered(const Conversation& conversation, std::shared_ptr<const Meter> meter);

// ---- outcomes --------------------------------------------------------------------------------

// What happened to one stage, as the run report says it.
enum class Status { committed, unchanged, skipped, declined, rejected, failed };
// How a whole run ended, as `compactor run` reports it (its exit code beside). declined: the cost
// gate kept the input, the compaction costing more than the prompt cache it would break;
// deferred: the request asks the API to make room itself, and the over-budget stages left it so.
enum class RunStatus { ok, over_budget, rejected, aborted, not_compacted, bad_input, failed, declined, deferred };
std::string_view to_string(Status status);
std::string_view to_string(RunStatus status);
std::ostream& operator<<(std::ostream& out, Status status);
std::ostream& operator<<(std::ostream& out, RunStatus status);

// One stage of a run.
struct StageOutcome {
  std::string stage;
  Status status = Status::failed;
  std::string reason;                // why unchanged, skipped, declined or failed (empty when rejected)
  std::vector<Violation> violations;  // what its candidate broke, when rejected
};

// ---- one stage -------------------------------------------------------------------------------

// A checker of your own, enabled beside the built-in ones, with its params.
struct ExtraChecker {
  const CheckerInfo* checker = nullptr;  // load_checker()'s, or one of your test's (in process)
  ParamValues params;                    // over its defaults, validated as the host validates them
};

struct StageRunOptions {
  Budget budget{SizeUnit::chars, 0, 0};   // limit 0: "over budget" from the first char
  std::size_t recent_exchanges = 1;
  ParamValues params;                      // over the stage's defaults, validated as the host does
  std::vector<std::string> checkers;       // the built-in checkers to run; empty: every one
  std::vector<ExtraChecker> extra_checkers;
  // The summarizer the stage is handed: load_summarizer()'s or one of your test's; null: the
  // built-in extractive one, as `compactor run` hands it by default.
  const SummarizerInfo* summarizer = nullptr;
  ParamValues summarizer_params;
  std::string restore_via = "cli";         // archive.restore_via: cli, mcp or a phrase holding {receipt}
  std::string archive_dir;                 // empty: a fresh temporary folder, removed at exit
  // What counts tokens when the budget is in tokens (meter()'s, as a config's `meter:`); null:
  // chars / 4.
  std::shared_ptr<const Meter> meter;
};

struct StageRun : StageOutcome {
  Conversation output;      // what the host holds after the stage (the input unless committed)
  std::string archive_dir;  // where its puts were committed (`compactor restore --archive`)
  std::string serialized() const { return output.serialize(); }
};

// Runs `stage` once on `input` as `compactor run` does with one pipeline entry (`when: always`,
// `on_violation: abort`): its params validated against its schema and its defaults filled in, the
// protected tail and active request computed, every enabled checker run on its candidate, the
// archive committed only when the candidate is. Throws std::runtime_error with the host's line
// when it refuses the setup (an unknown param, a value out of its range, a required one not given,
// a checker name it does not know).
StageRun run_stage_checked(const StageInfo& stage, const Conversation& input, const StageRunOptions& options = {});

// ---- a whole pipeline ------------------------------------------------------------------------

struct PipelineRunOptions {
  // Stages, checkers and summarizers of your test (in process) that the config names; plugins are
  // found as `compactor run` finds them.
  std::vector<const StageInfo*> stages;
  std::vector<const CheckerInfo*> checkers;
  std::vector<const SummarizerInfo*> summarizers;
  bool prompt_too_long = false;  // run `on_prompt_too_long` (--reason prompt_too_long)
  std::string archive_dir;       // empty: a fresh temporary folder rather than the config's
};

struct PipelineRun {
  RunStatus status = RunStatus::failed;
  int exit_code = 3;                  // what `compactor run` would exit with
  std::string error;                  // for bad_input and failed: the line(s) it would print
  std::vector<StageOutcome> stages;   // every entry, in order
  Conversation output;                // the last committed conversation (the input when none)
  std::string archive_dir;
  std::string serialized() const { return output.serialize(); }
  // The entry of that stage (the first, when it runs twice); throws std::out_of_range.
  const StageOutcome& stage(std::string_view name) const;
};

// Runs the pipeline of the config file `config_file` on `input` as `compactor run` does (config
// loaded and validated as it loads it, plugins and meter data found where it finds them, the
// model a request body names deciding `window: auto` and `meter: {kind: auto}`, a request that
// asks the API to compact deferred to). Throws std::runtime_error with the config's error lines
// when it is refused.
PipelineRun run_pipeline(const std::string& config_file, const Conversation& input, const PipelineRunOptions& options = {});

// ---- a summarizer ----------------------------------------------------------------------------

struct SummarizeOptions {
  std::size_t end = 0;                // summarize messages [0, end); 0: all but the last
  std::size_t max_chars = 1000;       // what the asking stage would accept
  std::vector<std::string> requests;  // the active request's texts, for context
  ParamValues params;                 // over the backend's defaults, validated as the host does
};

// A summary by `summarizer` (load_summarizer()'s, or one of your test's) made from its validated
// params, every call guarded as the host guards it (an exception is an Error naming it). Throws
// std::runtime_error with the host's line when the params are refused.
Expected<Summary> summarize(const SummarizerInfo& summarizer, const Conversation& conversation, const SummarizeOptions& options = {});

// ---- plugins, golden files, the archive ------------------------------------------------------

// What the plugin file `file` registers under that name (loaded by the real loader, with its
// fingerprint and name checks); throws std::runtime_error with the loader's one-line reason.
const StageInfo& load_stage(const std::string& file, const std::string& name);
const CheckerInfo& load_checker(const std::string& file, const std::string& name);
const SummarizerInfo& load_summarizer(const std::string& file, const std::string& kind);

// Compares `actual` with the golden file's bytes; with COMPACTOR_UPDATE_GOLDEN=1 in the
// environment, writes the file instead (review the diff before committing it).
::testing::AssertionResult matches_golden(const std::string& actual, const std::string& golden_file);

// The bytes archived under `receipt` in `archive_dir`, verified against the hash.
std::string restore(const std::string& archive_dir, const std::string& receipt);

}  // namespace compactor::testkit
