#include "host/model_meters.hpp"

#include "meter/calibration_fit.hpp"
#include "meter/meter_kinds.hpp"

namespace compactor {

std::pair<std::string, std::shared_ptr<const Meter>> ModelMeters::for_model(const ModelPrice* price, bool openai) const {
  auto named = [&](const std::string& name) -> std::pair<std::string, std::shared_ptr<const Meter>> {
    auto it = by_name.find(name);
    return {name, it == by_name.end() ? nullptr : it->second};
  };
  if (price != nullptr ? price->family.starts_with("gpt") : openai) return named("o200k");
  if (price != nullptr && by_name.count("calibrated/" + price->family)) return named("calibrated/" + price->family);
  return named("calibrated/" + default_family);
}

Expected<ModelMeters> make_model_meters(const std::vector<std::string>& kinds, const std::string& fit_path) {
  ModelMeters meters;
  for (const auto& k : kinds) {
    if (k != "calibrated") {
      auto m = make_meter(MeterSpec{k, "", ""});
      if (!m) return m.error();
      meters.by_name[k] = *m;
      continue;
    }
    auto fit = read_calibration_fit(fit_path);
    if (!fit) return fit.error();
    meters.default_family = fit->default_family;
    for (const auto& [family, _] : fit->families) {
      auto m = make_meter(MeterSpec{"calibrated", fit_path, family});
      if (!m) return m.error();
      meters.by_name["calibrated/" + family] = *m;
    }
  }
  return meters;
}

}  // namespace compactor
