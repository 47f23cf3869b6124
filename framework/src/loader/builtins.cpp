#include "loader/builtins.hpp"

#include "checkers/checker_support.hpp"
#include "loader/plugin_loader.hpp"
#include "wire/anthropic/messages_rules.hpp"

#include "compactor/summarizer.hpp"

namespace compactor {
namespace {

using Make = std::unique_ptr<Checker> (*)();

// A checker compiled into the host, as a plugin would describe it; it takes no params.
CheckerInfo checker(std::string name, std::string description, Make make) {
  CheckerInfo info;
  info.name = std::move(name);
  info.description = std::move(description);
  info.create = [make](const ParamValues&) -> Expected<std::unique_ptr<Checker>> { return make(); };
  return info;
}

}  // namespace

void register_builtins(PluginRegistry& r) {
  SummarizerInfo extractive;
  extractive.name = "extractive";
  extractive.description = "deterministic, offline: goal, files, tools and failures, last state";
  extractive.create = [](const ParamValues&) -> Expected<std::unique_ptr<Summarizer>> { return make_extractive_summarizer(); };
  (void)r.add_builtin(std::move(extractive));

  // In the order they run: the Messages API's own rules (docs/pipelines-and-stages.md) among
  // Compactor's invariants, the safety checkers those that keep what the history means and that
  // it stays recoverable.
  const CheckerTraits api_rule{false, true}, safety{true, false}, invariant{false, false};
  using namespace detail;
  (void)r.add_builtin(checker("structure", "the message sequence the API takes: roles, system entries' places, block members",
                              &make_structure_checker), api_rule);
  (void)r.add_builtin(checker("pairing", "every tool_use answered by exactly one tool_result, first in the next message",
                              &make_pairing_checker), api_rule);
  (void)r.add_builtin(checker("unique_ids", "tool_use ids unique, of the API's pattern", &make_unique_ids_checker), api_rule);
  (void)r.add_builtin(checker("pairs_unchanged", "a kept pair keeps its id, name, input and is_error", &make_pairs_unchanged_checker),
                      safety);
  (void)r.add_builtin(checker("thinking_unchanged", "thinking and compaction blocks never edited", &make_thinking_unchanged_checker),
                      safety);
  (void)r.add_builtin(checker("recent_intact", "the newest exchanges stay verbatim", &make_recent_intact_checker), safety);
  (void)r.add_builtin(checker("request_kept", "the active request stays, verbatim", &make_request_kept_checker), safety);
  (void)r.add_builtin(checker("no_growth", "a candidate no larger than its input", &make_no_growth_checker), invariant);
  (void)r.add_builtin(checker("archived", "what a stage removes is in the run's archive under a receipt it names",
                              &make_archived_checker), safety);
  (void)r.add_builtin(checker("cache_control", "no breakpoint added, never more than 4", &make_cache_control_checker), api_rule);
  (void)r.add_builtin(checker("order", "kept messages stay in their order", &make_order_checker), safety);
}

}  // namespace compactor
