#include "host/meter_section.hpp"

#include "host/yaml_writer.hpp"

namespace compactor::detail {

void read_meter_section(ConfigContext& c, const YAML::Node& root, const BudgetNodes& budget) {
  std::string kinds;
  for (auto k : meter_kinds()) kinds += (kinds.empty() ? "" : ", ") + std::string(k);
  auto meter = c.r.member(root, "", "meter", false);
  if (!meter) {
    if (budget.unit)
      c.r.error(*budget.unit, c.config.window ? "budget.window" : "budget.unit",
                "tokens need a meter: add `meter: {kind: …}` with one of " + kinds + (c.config.window ? ", auto" : ""));
    return;
  }
  if (!c.r.check_mapping(*meter, "meter", {"kind", "file", "family"})) return;
  MeterSpec spec;
  auto kind = c.r.member(*meter, "meter", "kind", true);
  if (!kind) return;
  std::vector<std::string> choices;
  for (auto k : meter_kinds()) choices.emplace_back(k);
  choices.emplace_back("auto");  // the request's model's: o200k or calibrated (host/model_meters.hpp)
  auto k = c.r.choice(*kind, "meter.kind", choices);
  if (!k) return;
  spec.kind = *k;
  const bool fitted = spec.kind == "calibrated" || spec.kind == "auto";
  std::optional<YAML::Node> file = c.r.member(*meter, "meter", "file", fitted);
  if (file) {
    auto f = c.r.string(*file, "meter.file");
    if (!f) return;
    spec.file = c.resolve(*f);
  } else if (fitted) {
    return;  // member() has reported the missing file
  }
  if (spec.kind == "auto") {
    if (auto family = (*meter)["family"]) {
      c.r.error(family, "meter.family", "an auto meter takes each model's family from the price table");
      return;
    }
    auto meters = make_model_meters({"o200k", "calibrated"}, spec.file);
    if (!meters) {
      c.r.error(*file, "meter.file", meters.error().message);
      return;
    }
    c.config.meter_spec = spec;
    c.config.model_meters = std::make_shared<const ModelMeters>(std::move(*meters));
    return;
  }
  if (auto family = c.r.member(*meter, "meter", "family", false)) {
    if (spec.kind != "calibrated") {
      c.r.error(*family, "meter.family", "only a calibrated meter has model families");
      return;
    }
    auto f = c.r.string(*family, "meter.family");
    if (!f) return;
    spec.family = *f;
  }
  auto loaded = make_meter(spec);
  if (!loaded) {
    c.r.error(file ? *file : *kind, file ? "meter.file" : "meter.kind", loaded.error().message);
    return;
  }
  c.config.meter_spec = spec;
  c.config.meter = std::move(*loaded);
}

void print_meter_section(std::string& out, const PipelineConfig& c) {
  if (c.meter_spec) {
    out += "meter:\n  kind: " + quoted(c.meter_spec->kind) + "\n";
    if (!c.meter_spec->file.empty()) out += "  file: " + quoted(absolute_path(c.meter_spec->file)) + "\n";
    if (!c.meter_spec->family.empty()) out += "  family: " + quoted(c.meter_spec->family) + "\n";
  }
}

}  // namespace compactor::detail
