#include "meter/calibration_fit.hpp"

#include "model/conversation_reader.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace compactor {

Expected<FamilyFit> CalibrationFit::family(const std::string& name) const {
  const std::string& want = name.empty() ? default_family : name;
  auto it = families.find(want);
  if (it != families.end()) return it->second;
  std::string known;
  for (const auto& [k, v] : families) known += (known.empty() ? "" : ", ") + k;
  return Error{"the fit has no model family \"" + want + "\"; it has: " + known};
}

std::string CalibrationFit::to_yaml(const std::string& provenance) const {
  std::string out = "# " + provenance + "\n";
  out += "# tokens(message) = per_token * " + base + "(message) + per_message, per model family.\n";
  out += "version: 1\nbase: " + base + "\ndefault_family: " + default_family + "\nfamilies:\n";
  for (const auto& [name, f] : families)
    out += fmt::format("  {}:\n    per_token: {:.6f}\n    per_message: {:.3f}\n    calls: {}\n    sessions: {}\n    overhead_median: {}\n",
                       name, f.per_token, f.per_message, f.calls, f.sessions, f.overhead_median);
  return out;
}

Expected<CalibrationFit> read_calibration_fit(const std::string& path) {
  // Read like every input: a regular file within the size limit (a FIFO or /dev/zero is refused).
  auto text = read_input_bytes(path);
  if (!text) return text.error();
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return Error{path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": " + e.msg};
  }
  auto at = [&](const YAML::Node& n, const std::string& what) {
    return Error{path + ":" + std::to_string(n.Mark().line + 1) + ":" + std::to_string(n.Mark().column + 1) + ": " + what};
  };
  if (!root.IsMap()) return Error{path + ": expected a calibration fit (a mapping with version, base, families)"};
  if (!root["version"] || root["version"].as<std::string>("") != "1") return at(root, "version: expected 1");
  CalibrationFit fit;
  // A file without `base` is most likely not a fit at all (a pipeline config, say): say it is missing.
  if (!root["base"]) return at(root, "base: missing: a calibration fit names its base meter (`compactor calibrate --out` writes one)");
  fit.base = root["base"].as<std::string>("");
  if (fit.base != "claude-legacy" && fit.base != "cl100k" && fit.base != "o200k" && fit.base != "chars4")
    return at(root["base"], "base: expected claude-legacy, cl100k, o200k or chars4, got \"" + fit.base + "\"");
  fit.default_family = root["default_family"] ? root["default_family"].as<std::string>("") : "";
  const YAML::Node families = root["families"];
  if (!families || !families.IsMap() || families.size() == 0) return at(root, "families: expected a mapping of model families");
  for (const auto& entry : families) {
    std::string name = entry.first.as<std::string>("");
    const YAML::Node& f = entry.second;
    FamilyFit ff;
    try {
      ff.per_token = f["per_token"].as<double>();
      ff.per_message = f["per_message"].as<double>();
      ff.calls = f["calls"] ? f["calls"].as<std::uint64_t>() : 0;
      ff.sessions = f["sessions"] ? f["sessions"].as<std::uint64_t>() : 0;
      ff.overhead_median = f["overhead_median"] ? f["overhead_median"].as<std::uint64_t>() : 0;
    } catch (const YAML::Exception&) {
      return at(f, "families." + name + ": expected per_token and per_message numbers");
    }
    if (!(ff.per_token > 0 && ff.per_token < 100)) return at(f, "families." + name + ".per_token: expected a number in (0, 100)");
    fit.families[name] = ff;
  }
  if (fit.default_family.empty()) fit.default_family = fit.families.begin()->first;
  if (!fit.families.count(fit.default_family)) return at(root["default_family"], "default_family: not one of the families");
  return fit;
}

}  // namespace compactor
