// The test kit for stage, summarizer and checker authors (`compactor::testkit`, GoogleTest):
// builders for conversations, a stage run through the real host (its checkers, archive and
// commit rules) and golden comparison. Link it in your tests, beside compactor::framework.
#pragma once

#include "compactor/checker.hpp"
#include "compactor/conversation.hpp"
#include "compactor/param_schema.hpp"
#include "compactor/stage.hpp"

#include <gtest/gtest.h>

#include <boost/json/object.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace compactor::testkit {

// Builds a conversation message by message, each validated as the host would read it (a message
// the model would not accept throws std::invalid_argument with the reason).
class ConversationBuilder {
 public:
  ConversationBuilder& user(std::string text);
  ConversationBuilder& assistant(std::string text);
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

struct StageRunOptions {
  Budget budget{SizeUnit::chars, 0, 0};   // limit 0: "over budget" from the first char
  std::size_t recent_exchanges = 1;
  ParamValues params;                      // over the stage's defaults
  std::vector<std::string> checkers;       // enabled checkers; empty: every built-in one
  // Your own checkers, enabled too: one load_checker() returned, or one of your test's (in process).
  std::vector<const CheckerInfo*> extra_checkers;
  std::string archive_dir;                 // empty: a fresh temporary folder, removed at exit
};

struct StageRun {
  std::string status;                   // committed | unchanged | declined | rejected | failed
  std::string reason;                   // why declined or failed (empty when rejected)
  std::vector<std::string> violations;  // one line each, when rejected
  Conversation output;                  // what the host holds after the stage (the input unless committed)
  std::string archive_dir;              // where its puts were committed (`compactor restore --archive`)
  std::string serialized() const { return output.serialize(); }
};

// Runs `stage` once on `input` as `compactor run` does with one pipeline entry (`when: always`,
// `on_violation: abort`): the stage's params validated with its defaults, the protected tail and
// active request computed, every enabled checker run on its candidate, the archive committed
// only when the candidate is. Throws std::runtime_error when the host refuses the setup (an
// unknown param, a required one not given, a checker name it does not know).
StageRun run_stage_checked(const StageInfo& stage, const Conversation& input, const StageRunOptions& options = {});

// A stage registered by the plugin file `file` (loaded by the real loader, with its fingerprint
// and name checks); throws std::runtime_error with the loader's one-line reason.
const StageInfo& load_stage(const std::string& file, const std::string& name);
const CheckerInfo& load_checker(const std::string& file, const std::string& name);

// Compares `actual` with the golden file's bytes; with COMPACTOR_UPDATE_GOLDEN=1 in the
// environment, writes the file instead (review the diff before committing it).
::testing::AssertionResult matches_golden(const std::string& actual, const std::string& golden_file);

// The bytes archived under `receipt` in `archive_dir`, verified against the hash.
std::string restore(const std::string& archive_dir, const std::string& receipt);

}  // namespace compactor::testkit
