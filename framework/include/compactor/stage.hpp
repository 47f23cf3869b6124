// The interface a compaction stage implements. A stage receives the committed conversation
// (immutable) and a context, and returns either a candidate (a new Conversation, sharing every
// message it did not change) or a decline with a reason. It never mutates its input; the host
// checks the candidate before committing it.
#pragma once

#include "compactor/archive.hpp"
#include "compactor/conversation.hpp"
#include "compactor/error.hpp"
#include "compactor/param_schema.hpp"
#include "compactor/protected_tail.hpp"
#include "compactor/size_unit.hpp"
#include "compactor/stage_logger.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace compactor {

class Summarizer;

struct Budget {
  SizeUnit unit = SizeUnit::chars;
  std::uint64_t limit = 0;   // over this, `when: over_budget` stages run
  std::uint64_t target = 0;  // what a stage aims for once it runs (≤ limit)
};

struct StageContext {
  Budget budget;
  ProtectedTail tail;                 // of the committed conversation
  std::vector<std::string> requests;  // the active request's texts (the substantive prompt, then the newest), verbatim; empty when none
  Archive* archive = nullptr;         // put() what you remove; name the receipt in the marker
  Summarizer* summarizer = nullptr;   // null unless configured
  StageLogger* log = nullptr;         // never null when the host calls a stage

  std::uint64_t size(const Conversation& c) const { return c.size_in(budget.unit); }
  bool over_limit(const Conversation& c) const { return size(c) > budget.limit; }
  bool over_target(const Conversation& c) const { return size(c) > budget.target; }
};

// A candidate is the list of messages the stage proposes; the host puts them in the committed
// conversation's frame (the request body's `system`, `tools`, `model`… and the input's layout), so
// a stage cannot drop or change the frame, whatever Conversation it built the list in.
class StageResult {
 public:
  static StageResult candidate(std::vector<MessagePtr> messages) {
    StageResult r;
    r.messages_ = std::move(messages);
    r.candidate_ = true;
    return r;
  }
  static StageResult candidate(Conversation conversation) {
    StageResult r;
    r.built_ = std::move(conversation);
    r.candidate_ = true;
    return r;
  }
  static StageResult decline(std::string reason) {
    StageResult r;
    r.reason_ = std::move(reason);
    return r;
  }

  bool declined() const { return !candidate_; }
  const std::vector<MessagePtr>& messages() const { return built_ ? built_->messages() : messages_; }
  const std::string& reason() const { return reason_; }

 private:
  friend class ConversationHost;  // puts the candidate in the committed conversation's frame
  StageResult() = default;
  bool candidate_ = false;
  std::vector<MessagePtr> messages_;
  std::optional<Conversation> built_;
  std::string reason_;
};

class Stage {
 public:
  virtual ~Stage() = default;
  virtual StageResult run(const Conversation& committed, const StageContext& context) = 0;
};

using StageFactory = std::function<Expected<std::unique_ptr<Stage>>(const ParamValues& params)>;

// The factory of a stage class constructed from its validated params (or from nothing).
template <class S>
StageFactory factory_of() {
  return [](const ParamValues& params) -> Expected<std::unique_ptr<Stage>> {
    if constexpr (std::is_constructible_v<S, const ParamValues&>)
      return std::unique_ptr<Stage>(std::make_unique<S>(params));
    else
      return std::unique_ptr<Stage>(std::make_unique<S>());
  };
}

// What a plugin registers for each stage it provides.
struct StageInfo {
  std::string name;         // what a pipeline entry's `stage:` names
  std::string description;  // one line, shown by `compactor plugins`
  ParamSchema params;
  bool may_touch_tail = false;  // may put receipt markers in tool_result content of the protected tail
  bool may_grow = false;        // its candidate may be larger than its input
  StageFactory create;
};

}  // namespace compactor
