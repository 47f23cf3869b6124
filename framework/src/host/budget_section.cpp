#include "host/budget_section.hpp"

#include "host/yaml_writer.hpp"

namespace compactor {

Budget WindowBudget::of(std::uint64_t window) const {
  const auto share = [&](double f) { return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(f * static_cast<double>(window))); };
  return Budget{SizeUnit::tokens, share(trigger), std::min(share(target), share(trigger))};
}

namespace detail {
namespace {

// `budget: {window: auto | TOKENS, trigger: 0.8, target: 0.6}`: in tokens, trigger and target
// shares of the window. An auto window is the price table's for the request's model; the budget
// printed and validated is the default model's (settle_window).
void read_window_budget(ConfigContext& c, const YAML::Node& budget, BudgetNodes& nodes) {
  WindowBudget w;
  const YAML::Node window = budget["window"];
  nodes.unit = window;  // a window counts tokens: the meter's absence is reported here
  c.config.budget.unit = SizeUnit::tokens;
  const bool plain = window.IsScalar() && window.Tag() == "?";
  if (plain && window.Scalar() == "auto") {
    nodes.window_auto = window;
  } else if (plain && !window.Scalar().empty() && window.Scalar().find_first_not_of("0123456789") == std::string::npos) {
    auto n = c.r.integer(window, "budget.window", 1000);
    if (!n) return;
    w.tokens = static_cast<std::uint64_t>(*n);
  } else {
    c.r.error(window, "budget.window",
              "expected auto (the model's, from the price table) or a number of tokens (at least 1000), got " + YamlReader::describe(window));
    return;
  }
  if (const YAML::Node limit = budget["limit"])
    c.r.error(limit, "budget.limit", "with budget.window the limit is budget.trigger, a share of the window; give one or the other");
  if (const YAML::Node unit = budget["unit"]; unit && !(unit.IsScalar() && unit.Scalar() == "tokens"))
    c.r.error(unit, "budget.unit", "a window is counted in tokens: leave budget.unit out or say tokens, got " + YamlReader::describe(unit));
  if (const YAML::Node t = budget["trigger"])
    if (auto v = c.r.param(t, "budget.trigger", ParamSpec::number("trigger", "", 0.8).at_least(0.01).at_most(1.0)))
      w.trigger = std::holds_alternative<double>(*v) ? std::get<double>(*v) : static_cast<double>(std::get<std::int64_t>(*v));
  if (const YAML::Node t = budget["target"])
    if (auto v = c.r.param(t, "budget.target", ParamSpec::number("target", "", 0.6).at_least(0.01).at_most(w.trigger)))
      w.target = std::holds_alternative<double>(*v) ? std::get<double>(*v) : static_cast<double>(std::get<std::int64_t>(*v));
  if (w.target > w.trigger) w.target = w.trigger;  // reported above
  c.config.window = w;
  if (w.tokens > 0) c.config.budget = w.of(w.tokens);
}

}  // namespace

BudgetNodes read_budget_section(ConfigContext& c, const YAML::Node& root) {
  BudgetNodes nodes;
  auto budget = c.r.member(root, "", "budget", true);
  if (!budget || !c.r.check_mapping(*budget, "budget", {"unit", "limit", "target", "window", "trigger"})) return nodes;
  if ((*budget)["window"]) {
    read_window_budget(c, *budget, nodes);
    return nodes;
  }
  if (const YAML::Node trigger = (*budget)["trigger"])
    c.r.error(trigger, "budget.trigger", "a share of a window: give budget.window (auto or a number of tokens) with it, or budget.limit alone");
  if (auto unit = c.r.member(*budget, "budget", "unit", false)) {
    if (auto u = c.r.choice(*unit, "budget.unit", {"chars", "bytes", "tokens"})) {
      c.config.budget.unit = *size_unit_from_string(*u);
      if (c.config.budget.unit == SizeUnit::tokens) nodes.unit = *unit;
    }
  }
  std::optional<std::int64_t> limit, target;
  if (auto l = c.r.member(*budget, "budget", "limit", true)) limit = c.r.integer(*l, "budget.limit", 1);
  if (auto t = c.r.member(*budget, "budget", "target", false)) {
    target = c.r.integer(*t, "budget.target", 1);
    if (target && limit && *target > *limit) {
      c.r.error(*t, "budget.target", "expected an integer from 1 to the limit " + std::to_string(*limit) + ", got \"" +
                                        std::to_string(*target) + "\"");
      target.reset();
    }
  }
  c.config.budget.limit = static_cast<std::uint64_t>(limit.value_or(0));
  c.config.budget.target = static_cast<std::uint64_t>(target.value_or(limit.value_or(0)));
  return nodes;
}

void settle_window(ConfigContext& c, const BudgetNodes& nodes) {
  if (!c.config.window || c.config.window->tokens > 0 || !nodes.window_auto) return;
  if (!c.config.prices) {
    c.r.error(*nodes.window_auto, "budget.window",
              "auto finds the window of the request's model in the price table: add `prices: prices.yaml` (configs/prices.yaml)");
    return;
  }
  auto w = c.config.prices->window_of(c.config.prices->default_model);
  if (!w) {
    c.r.error(*nodes.window_auto, "budget.window", c.config.prices_file + ": the price table gives no context_window for its default model");
    return;
  }
  c.config.budget = c.config.window->of(w->tokens);
}

void print_budget_section(std::string& out, const PipelineConfig& c) {
  if (c.window) {
    out += "budget:\n  window: " + (c.window->tokens > 0 ? std::to_string(c.window->tokens) : std::string("auto")) +
           "  # " + std::to_string(c.budget.limit) + " / " + std::to_string(c.budget.target) + " tokens" +
           (c.window->tokens > 0 ? std::string() : " at the default model's window") + "\n  trigger: " +
           yaml_value(ParamValue(c.window->trigger)) + "\n  target: " + yaml_value(ParamValue(c.window->target)) + "\n";
  } else {
    out += "budget:\n  unit: " + std::string(to_string(c.budget.unit)) + "\n  limit: " + std::to_string(c.budget.limit) +
           "\n  target: " + std::to_string(c.budget.target) + "\n";
  }
}

}  // namespace detail
}  // namespace compactor
