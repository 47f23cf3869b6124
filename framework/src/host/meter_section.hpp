// `meter:`: what counts tokens when the budget is in tokens: one of the host's meter kinds (its
// rank file found beside the program, or named by `file:`), a calibrated fit and its family, or
// `auto`, each request's model's (host/model_meters.hpp).
#pragma once

#include "host/budget_section.hpp"

#include <string>

namespace compactor::detail {

// `budget` says where the budget counts tokens: a meter is needed there.
void read_meter_section(ConfigContext& c, const YAML::Node& root, const BudgetNodes& budget);

void print_meter_section(std::string& out, const PipelineConfig& c);

}  // namespace compactor::detail
