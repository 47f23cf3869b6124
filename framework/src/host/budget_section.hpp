// `budget:`: what `when: over_budget` measures, a limit and a target in chars, bytes or tokens, or
// shares of a context window in tokens (`window: auto` is the request's model's, from the price
// table).
#pragma once

#include "host/config_context.hpp"

#include <optional>
#include <string>

namespace compactor::detail {

// Where the budget said what the meter and the price table must answer for.
struct BudgetNodes {
  std::optional<YAML::Node> unit;         // budget.unit when it says tokens, or budget.window (it counts tokens)
  std::optional<YAML::Node> window_auto;  // budget.window when it says auto
};

BudgetNodes read_budget_section(ConfigContext& c, const YAML::Node& root);

// An auto window needs the price table, and the table a window for its default model: the budget
// a run uses when its input names no model, and what validate and print-pipeline show. Run once
// `prices:` is read.
void settle_window(ConfigContext& c, const BudgetNodes& nodes);

void print_budget_section(std::string& out, const PipelineConfig& c);

}  // namespace compactor::detail
