#include "host/call_triage.hpp"

#include "compactor/message_edit.hpp"
#include "loader/plugin_loader.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <stdexcept>

namespace compactor {
namespace {

namespace json = boost::json;

// A reference to an earlier output replaces only a result over this many chars (arrival's own
// threshold; its content bytes are at least as many).
constexpr std::size_t kRepeatedBytes = 200;

// The final user message when it carries tool results (the results the model has not seen yet).
const Message* new_results(const Conversation& c) {
  if (c.size() < 2) return nullptr;
  const Message& last = c[c.size() - 1];
  return last.role() == Role::user && last.has_tool_result() ? &last : nullptr;
}

// The newest turn (the assistant messages before the final user run) calls `tool`, and the final
// user message carries its batch's results.
bool tool_called(const Conversation& c, const std::string& tool) {
  if (new_results(c) == nullptr) return false;
  std::size_t turn = c.size() - 1;
  while (turn > 0 && c[turn - 1].role() == Role::user) --turn;
  while (turn > 0 && c[turn - 1].role() == Role::assistant) {
    --turn;
    for (const Block& b : c[turn].blocks())
      if (b.kind() == BlockKind::tool_use && b.name() == tool) return true;
  }
  return false;
}

std::uint64_t newest_batch_chars(const Conversation& c) {
  std::size_t index = c.size();
  while (index > 0 && !c[index - 1].has_tool_result()) --index;
  if (index == 0) return 0;
  std::uint64_t total = 0;
  for (const Block& b : c[index - 1].blocks())
    if (b.kind() == BlockKind::tool_result) total += result_content_chars(b);
  return total;
}

std::optional<std::string> holds(const TriageStage::Trigger& t, const Conversation& c) {
  using Kind = StageTrigger::Kind;
  const Message* results = new_results(c);
  switch (t.kind) {
    case Kind::tool_called:
      if (tool_called(c, t.tool)) return "the newest turn calls " + t.tool;
      return std::nullopt;
    case Kind::newest_batch_over:
      if (std::uint64_t chars = newest_batch_chars(c); chars > t.chars)
        return fmt::format("the newest batch of results is {} chars, over {}", chars, t.chars);
      return std::nullopt;
    case Kind::new_result_over:
      if (results != nullptr)
        for (const Block& b : results->blocks())
          if (b.kind() == BlockKind::tool_result && result_content_chars(b) > t.chars)
            return fmt::format("a new tool result is over {} chars", t.chars);
      return std::nullopt;
    case Kind::new_result_repeated:
      if (results == nullptr || !t.on) return std::nullopt;
      for (std::size_t k = 0; k < results->blocks().size(); ++k) {
        if (results->blocks()[k].kind() != BlockKind::tool_result) continue;
        const std::string_view content = raw_block_field(*results, k, "content");
        if (content.size() <= kRepeatedBytes) continue;
        for (std::size_t i = 0; i + 1 < c.size(); ++i)
          if (c[i].raw().find(content) != std::string_view::npos) return "a new tool result repeats an earlier one";
      }
      return std::nullopt;
    case Kind::messages_over:
      if (c.size() > t.chars) return fmt::format("{} messages, over {}", c.size(), t.chars);
      return std::nullopt;
  }
  return "an unknown condition";
}

// The trigger with its param's value; nothing when the stage has no such param of that type.
std::optional<TriageStage::Trigger> resolved(const StageTrigger& declared, const ParamValues& params) {
  if (!params.has(declared.param)) return std::nullopt;
  TriageStage::Trigger t;
  t.kind = declared.kind;
  try {
    switch (declared.kind) {
      case StageTrigger::Kind::tool_called: t.tool = params.string(declared.param); break;
      case StageTrigger::Kind::newest_batch_over:
      case StageTrigger::Kind::new_result_over:
      case StageTrigger::Kind::messages_over: {
        const std::int64_t n = params.integer(declared.param);
        if (n < 0) return std::nullopt;
        t.chars = static_cast<std::uint64_t>(n);
        break;
      }
      case StageTrigger::Kind::new_result_repeated: t.on = params.boolean(declared.param); break;
    }
  } catch (const std::logic_error&) {
    return std::nullopt;
  }
  return t;
}

}  // namespace

bool over_trigger(const Conversation& input, const Budget& budget) { return input.size_in(budget.unit) > budget.limit; }

CallTriage CallTriage::of(const PipelineConfig& config) {
  CallTriage out;
  for (const PipelineEntryConfig& entry : config.pipeline) {
    TriageStage s;
    s.stage = entry.stage;
    s.when = entry.when.kind;
    s.messages = entry.when.messages;
    const StageInfo* info = entry.registered != nullptr ? entry.registered->info : nullptr;
    s.every_call = info == nullptr || info->acts_when.empty();
    for (std::size_t i = 0; !s.every_call && i < info->acts_when.size(); ++i) {
      auto t = resolved(info->acts_when[i], entry.params);
      if (t) s.triggers.push_back(std::move(*t));
      else s.every_call = true;
    }
    if (s.every_call) s.triggers.clear();
    out.stages_.push_back(std::move(s));
  }
  return out;
}

json::value CallTriage::to_json() const {
  json::array stages;
  for (const TriageStage& s : stages_) {
    json::array triggers;
    for (const auto& t : s.triggers)
      triggers.push_back(json::object{{"kind", static_cast<int>(t.kind)}, {"tool", t.tool}, {"chars", t.chars}, {"on", t.on}});
    stages.push_back(json::object{{"stage", s.stage},
                                  {"when", static_cast<int>(s.when)},
                                  {"messages", s.messages},
                                  {"every_call", s.every_call},
                                  {"triggers", std::move(triggers)}});
  }
  return stages;
}

std::optional<CallTriage> CallTriage::from_json(const json::value& v) {
  CallTriage out;
  try {
    for (const json::value& e : v.as_array()) {
      const json::object& o = e.as_object();
      TriageStage s;
      s.stage = std::string(o.at("stage").as_string());
      s.when = static_cast<WhenKind>(o.at("when").to_number<int>());
      s.messages = o.at("messages").to_number<std::uint64_t>();
      s.every_call = o.at("every_call").as_bool();
      for (const json::value& te : o.at("triggers").as_array()) {
        const json::object& to = te.as_object();
        TriageStage::Trigger t;
        t.kind = static_cast<StageTrigger::Kind>(to.at("kind").to_number<int>());
        t.tool = std::string(to.at("tool").as_string());
        t.chars = to.at("chars").to_number<std::uint64_t>();
        t.on = to.at("on").as_bool();
        s.triggers.push_back(std::move(t));
      }
      out.stages_.push_back(std::move(s));
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> CallTriage::needs_pipeline(const Conversation& input, const Budget& budget) const {
  if (over_trigger(input, budget))
    return fmt::format("over the trigger ({} > {} {})", input.size_in(budget.unit), budget.limit, to_string(budget.unit));
  for (const TriageStage& s : stages_) {
    if (s.when == WhenKind::over_budget) continue;  // within the limit: skipped
    if (s.when == WhenKind::messages_over && input.size() <= s.messages) continue;
    if (s.every_call) return s.stage + ": sees every call";
    for (const auto& t : s.triggers)
      if (auto why = holds(t, input)) return s.stage + ": " + *why;
  }
  return std::nullopt;
}

}  // namespace compactor
