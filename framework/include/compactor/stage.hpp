// The interface a compaction stage implements. A stage receives the committed conversation
// (immutable) and a context, and returns either a candidate (a new Conversation, sharing every
// message it did not change) or a decline with a reason. It never mutates its input; the host
// checks the candidate before committing it.
#pragma once

#include "compactor/archive.hpp"
#include "compactor/conversation.hpp"
#include "compactor/error.hpp"
#include "compactor/factory.hpp"
#include "compactor/param_schema.hpp"
#include "compactor/protected_tail.hpp"
#include "compactor/size_unit.hpp"
#include "compactor/stage_logger.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

class Summarizer;

struct Budget {
  SizeUnit unit = SizeUnit::chars;
  std::uint64_t limit = 0;   // over this, `when: over_budget` stages run
  std::uint64_t target = 0;  // what a stage aims for once it runs (≤ limit)
};

// What the host hands a stage besides the committed conversation. The archive and the logger are
// always there; a summarizer only when the config has one.
struct StageContext {
  StageContext(Archive& archive_, StageLogger& log_) : archive(archive_), log(log_) {}

  Budget budget;
  ProtectedTail tail;                 // of the committed conversation
  std::vector<std::string> requests;  // the active request's texts (the substantive prompt, then the newest), verbatim; empty when none
  Archive& archive;                   // put() what you remove; name the receipt in the marker
  StageLogger& log;
  Summarizer* summarizer = nullptr;   // null unless configured
  // How the model gets archived bytes back in this deployment (`archive.restore_via`): a phrase
  // with `{receipt}` where the receipt goes, "`compactor restore {receipt}`" by default. A history
  // says it once: in its summary, or after its oldest marker (restore_told_before).
  std::string restore_via = "`compactor restore {receipt}`";

  std::uint64_t size(const Conversation& c) const { return c.size_in(budget.unit); }
  bool over_limit(const Conversation& c) const { return size(c) > budget.limit; }
  bool over_target(const Conversation& c) const { return size(c) > budget.target; }
  // restore_via for one receipt: "`compactor restore sha256:…`".
  std::string how_to_restore(std::string_view receipt) const {
    std::string out = restore_via;
    constexpr std::string_view kSlot = "{receipt}";
    for (std::size_t at = out.find(kSlot); at != std::string::npos; at = out.find(kSlot, at + receipt.size()))
      out.replace(at, kSlot.size(), receipt);
    return out;
  }
};

// What a stage returns: a candidate (the messages it proposes), nothing to do, or a decline.
// A candidate is put by the host in the committed conversation's frame (the request body's
// `system`, `tools`, `model`… and the input's layout), so a stage cannot drop or change the frame,
// whatever Conversation it built the list in.
class StageResult {
 public:
  enum class Kind { candidate, nothing_to_do, declined };

  static StageResult candidate(std::vector<MessagePtr> messages) {
    StageResult r(Kind::candidate);
    r.messages_ = std::move(messages);
    return r;
  }
  static StageResult candidate(Conversation conversation) {
    StageResult r(Kind::candidate);
    r.built_ = std::move(conversation);
    return r;
  }
  // Nothing to do here (within its thresholds, nothing eligible): the run reports the stage
  // `unchanged` (with the reason, when given) and goes on.
  static StageResult nothing_to_do(std::string reason = {}) {
    StageResult r(Kind::nothing_to_do);
    r.reason_ = std::move(reason);
    return r;
  }
  // There was something to do, but not safely (the summarizer failed, the archive refused a put,
  // a cut would split a pair): the run reports the stage `declined` with the reason and goes on.
  static StageResult decline(std::string reason) {
    StageResult r(Kind::declined);
    r.reason_ = std::move(reason);
    return r;
  }

  Kind kind() const { return kind_; }
  bool declined() const { return kind_ == Kind::declined; }
  const std::vector<MessagePtr>& messages() const { return built_ ? built_->messages() : messages_; }
  const std::string& reason() const { return reason_; }

 private:
  friend class ConversationHost;  // puts the candidate in the committed conversation's frame
  explicit StageResult(Kind kind) : kind_(kind) {}
  Kind kind_;
  std::vector<MessagePtr> messages_;
  std::optional<Conversation> built_;
  std::string reason_;
};

class Stage {
 public:
  virtual ~Stage() = default;
  virtual StageResult run(const Conversation& committed, const StageContext& context) = 0;
};

using StageFactory = Factory<Stage>;

// One condition under which a stage may act (StageInfo::acts_when); `param` names the stage's own
// param that holds the tool name, the number of chars or the switch.
struct StageTrigger {
  enum class Kind {
    tool_called,          // the newest turn calls the tool `param` names and its results are in
    newest_batch_over,    // the newest batch of tool results is over `param` chars in all
    new_result_over,      // a tool result of the final user message is over `param` chars
    new_result_repeated,  // (when the boolean `param` is true) a tool result of the final user
                          // message, over 200 bytes, has content bytes an earlier message holds
    messages_over,        // the history has more than `param` messages
  };
  Kind kind;
  std::string param;
};

// What a plugin registers for each stage it provides.
struct StageInfo {
  std::string name;         // what a pipeline entry's `stage:` names
  std::string description;  // one line, shown by `compactor plugins`
  ParamSchema params;
  bool may_touch_tail = false;  // may put receipt markers in tool_result content of the protected tail
  bool may_grow = false;        // its candidate may be larger than its input
  bool summarizes = false;      // it replaces what it removes with a summary (`compactor bench` counts them)
  // Its cut is one the call cannot go without (the model asked for it; a batch too large to send):
  // the cost gate weighs what the stages after it do, never the cut itself.
  bool forced = false;
  // When the stage can change a call's history at all, as the host can tell from the newest
  // messages before any stage runs: a call on which no stage can act needs no pipeline (serve
  // forwards it without starting a worker). Empty (the default): the stage must see every call it
  // runs on. The host checks each condition with its own code, never the stage's, so a condition
  // must hold on every call where the stage would change something (it may hold on more).
  std::vector<StageTrigger> acts_when;
  StageFactory create;
};

}  // namespace compactor
