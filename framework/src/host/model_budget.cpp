#include "host/model_budget.hpp"

namespace compactor {

RunBudget run_budget(const PipelineConfig& config, std::string_view model, bool openai) {
  RunBudget out;
  out.budget = config.budget;
  out.meter = config.meter;
  out.model = std::string(model);
  if (config.meter_spec) out.meter_name = config.meter_spec->kind;
  const PriceTable* prices = config.prices.get();
  const std::string_view named = model.empty() && prices != nullptr ? std::string_view(prices->default_model) : model;
  if (prices != nullptr) out.price = prices->find(named);
  if (out.price == nullptr && prices != nullptr) out.price = prices->find(prices->default_model);
  if (config.window && config.window->tokens > 0) {
    out.window = config.window->tokens;
    out.window_from = "budget.window";
  } else if (config.window && prices != nullptr) {
    if (auto w = prices->window_of(named)) {
      out.window = w->tokens;
      out.window_from = model.empty() ? w->how + ", the table's default model: the request names no model" : w->how;
      out.budget = config.window->of(w->tokens);
    }
  }
  if (config.model_meters != nullptr) {
    // The tokenizer is the model's when the table knows it; an unnamed model of an OpenAI API is
    // not the table's default (a Claude model) but an OpenAI one.
    const ModelPrice* known = prices == nullptr ? nullptr : !model.empty() ? prices->find(model) : openai ? nullptr : out.price;
    auto [name, meter] = config.model_meters->for_model(known, openai);
    out.meter_name = name;
    out.meter = meter;
  }
  return out;
}

}  // namespace compactor
