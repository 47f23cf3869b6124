// Which calls need a pipeline at all. A run changes nothing when no stage can act: the history is
// within the budget's limit (so no `when: over_budget` stage runs), and no other stage that would
// run declares a condition the call holds (StageInfo::acts_when; a stage that declares none must
// see every call). serve decides with this, in its own process and with the host's code only,
// whether a call needs a pipeline worker; the pipeline's own trigger is `over_trigger`, the same
// rule, so the two can never disagree about a call.
#pragma once

#include "compactor/conversation.hpp"
#include "compactor/stage.hpp"
#include "host/pipeline_config.hpp"

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace compactor {

// Whether `input` (metered as the run measures it) crossed the budget's limit: the
// `when: over_budget` stages run (Pipeline::run_stages).
bool over_trigger(const Conversation& input, const Budget& budget);

// One pipeline entry as the triage sees it: its `when`, and its declared conditions with their
// params' values (a loaded plugin's declaration, read where the plugins are loaded).
struct TriageStage {
  struct Trigger {
    StageTrigger::Kind kind = StageTrigger::Kind::tool_called;
    std::string tool;         // tool_called
    std::uint64_t chars = 0;  // newest_batch_over, new_result_over; messages_over: messages
    bool on = true;           // new_result_repeated
  };
  std::string stage;
  WhenKind when = WhenKind::always;
  std::uint64_t messages = 0;  // messages_over
  bool every_call = true;      // it declares no condition
  std::vector<Trigger> triggers;
};

class CallTriage {
 public:
  // The config's pipeline, its stages resolved to their plugins (the zygote's): each stage's
  // declaration with its params' values. An entry whose declaration names a param the stage
  // lacks, or of another type, counts as one that must see every call.
  static CallTriage of(const PipelineConfig& config);

  // Across the process boundary (the zygote tells the server in its ready message).
  boost::json::value to_json() const;
  static std::optional<CallTriage> from_json(const boost::json::value& v);

  // Why a run on `input` may change it ("over the trigger", "arrival: a new tool result over 4000
  // chars", …); nothing when no stage can act, so the run would leave `input` as it is.
  std::optional<std::string> needs_pipeline(const Conversation& input, const Budget& budget) const;

  const std::vector<TriageStage>& stages() const { return stages_; }

 private:
  std::vector<TriageStage> stages_;
};

}  // namespace compactor
