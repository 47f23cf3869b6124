#include "bench/sweep.hpp"

#include "host/pipeline_config.hpp"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <optional>

namespace compactor::bench {

namespace {

namespace fs = std::filesystem;

std::string at(const std::string& file, const YAML::Node& node, const std::string& path) {
  const YAML::Mark m = node.Mark();
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " + path;
}

std::string scalar_text(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

struct Axis {
  std::string key;
  std::vector<YAML::Node> values;
};

// What the sweep file says, checked: every problem a located line.
struct SweepFile {
  std::string base;  // from the working folder
  std::vector<Axis> grid;
  std::vector<std::vector<std::string>> orderings;  // empty: the base's order only
};

// The base config's resolved pipeline (print-pipeline), as YAML to set values in.
Expected<YAML::Node> base_pipeline(const std::string& base) {
  ConfigLoadResult loaded = load_pipeline_config(base);
  if (!loaded.config) return Error{loaded.errors.empty() ? base + ": cannot load" : loaded.errors.front()};
  return YAML::Load(print_pipeline(*loaded.config));
}

// Sets KEY in the printed config: STAGE.PARAM in every entry of that stage, else SECTION.KEY.
std::optional<std::string> set_value(YAML::Node root, const std::string& key, const YAML::Node& value) {
  const std::size_t dot = key.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == key.size()) return "expected SECTION.KEY or STAGE.PARAM";
  const std::string head = key.substr(0, dot), rest = key.substr(dot + 1);
  bool found = false;
  for (YAML::Node entry : root["pipeline"])
    if (entry["stage"] && entry["stage"].Scalar() == head) {
      entry["params"][rest] = YAML::Clone(value);
      found = true;
    }
  if (found) return std::nullopt;
  if (!root[head] || !root[head].IsMap()) return "no stage or section " + head + " in the base config";
  root[head][rest] = YAML::Clone(value);
  return std::nullopt;
}

// The base's pipeline entries in `order`; a stage the base does not have is an error.
std::optional<std::string> reorder(YAML::Node root, const std::vector<std::string>& order) {
  YAML::Node reordered(YAML::NodeType::Sequence);
  for (const std::string& stage : order) {
    bool found = false;
    for (const YAML::Node& entry : root["pipeline"])
      if (entry["stage"] && entry["stage"].Scalar() == stage) reordered.push_back(YAML::Clone(entry)), found = true;
    if (!found) return "no stage " + stage + " in the base pipeline";
  }
  root["pipeline"] = reordered;
  return std::nullopt;
}

Expected<bool> read_grid(const std::string& file, const YAML::Node& grid, SweepFile& out) {
  if (!grid.IsMap() || grid.size() == 0) return Error{at(file, grid, "grid") + ": expected a mapping of KEY: [values]"};
  for (const auto& kv : grid) {
    const std::string key = kv.first.Scalar();
    if (!kv.second.IsSequence() || kv.second.size() == 0) return Error{at(file, kv.second, "grid." + key) + ": expected a non-empty list of values"};
    Axis axis{key, {}};
    for (const auto& v : kv.second) {
      if (!v.IsScalar()) return Error{at(file, v, "grid." + key) + ": expected a scalar value"};
      axis.values.push_back(v);
    }
    out.grid.push_back(std::move(axis));
  }
  return true;
}

Expected<bool> read_lists(const std::string& file, const YAML::Node& root, SweepFile& out, Sweep& sweep) {
  const fs::path dir = fs::path(file).parent_path();
  if (const YAML::Node o = root["orderings"]) {
    if (!o.IsSequence()) return Error{at(file, o, "orderings") + ": expected a list of stage lists"};
    for (const auto& order : o) {
      if (!order.IsSequence() || order.size() == 0) return Error{at(file, order, "orderings") + ": expected a non-empty list of stage names"};
      std::vector<std::string> stages;
      for (const auto& s : order) stages.push_back(s.Scalar());
      out.orderings.push_back(std::move(stages));
    }
  }
  if (const YAML::Node c = root["configs"]) {
    if (!c.IsSequence()) return Error{at(file, c, "configs") + ": expected a list of config files"};
    for (const auto& path : c) sweep.configs.push_back((dir / path.Scalar()).lexically_normal().string());
  }
  if (const YAML::Node l = root["long_sessions"]) {
    try {
      sweep.long_sessions = l.as<std::uint64_t>();
    } catch (const YAML::Exception&) {
      return Error{at(file, l, "long_sessions") + ": expected a number of tokens, got " + scalar_text(l)};
    }
  }
  return true;
}

Expected<SweepFile> read_file(const std::string& file, Sweep& sweep) {
  SweepFile out;
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::BadFile&) {
    return Error{file + ": cannot read the sweep file"};
  } catch (const YAML::Exception& e) {
    return Error{file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg};
  }
  if (!root.IsMap()) return Error{file + ": expected a mapping with base and grid"};
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (key != "base" && key != "grid" && key != "orderings" && key != "configs" && key != "long_sessions")
      return Error{at(file, kv.first, key) + ": unknown key (base, grid, orderings, configs, long_sessions)"};
  }
  if (!root["base"] || !root["base"].IsScalar()) return Error{file + ": base: the config the points start from is required"};
  out.base = (fs::path(file).parent_path() / root["base"].Scalar()).lexically_normal().string();
  if (!root["grid"]) return Error{file + ": grid: the values to sweep are required"};
  if (auto g = read_grid(file, root["grid"], out); !g) return g.error();
  if (auto l = read_lists(file, root, out, sweep); !l) return l.error();
  return out;
}

}  // namespace

Expected<Sweep> read_sweep(const std::string& file) {
  Sweep sweep;
  auto spec = read_file(file, sweep);
  if (!spec) return spec.error();
  sweep.base = spec->base;
  auto base = base_pipeline(spec->base);
  if (!base) return Error{file + ": base: " + base.error().message};
  const std::string stem = fs::path(file).stem().string();
  const std::vector<std::vector<std::string>> orderings = spec->orderings.empty() ? std::vector<std::vector<std::string>>{{}} : spec->orderings;
  const YAML::Node grid_node = YAML::LoadFile(file)["grid"];
  for (const auto& order : orderings) {
    std::vector<std::size_t> pick(spec->grid.size(), 0);
    for (bool more = true; more;) {
      YAML::Node point = YAML::Clone(*base);
      std::string settings;
      if (!order.empty()) {
        if (auto problem = reorder(point, order)) return Error{at(file, YAML::LoadFile(file)["orderings"], "orderings") + ": " + *problem};
        std::string list;
        for (const auto& s : order) list += (list.empty() ? "" : ">") + s;
        settings = "order=" + list;
      }
      for (std::size_t k = 0; k < spec->grid.size(); ++k) {
        const Axis& axis = spec->grid[k];
        if (auto problem = set_value(point, axis.key, axis.values[pick[k]])) return Error{at(file, grid_node[axis.key], "grid." + axis.key) + ": " + *problem};
        settings += (settings.empty() ? "" : ", ") + axis.key + "=" + scalar_text(axis.values[pick[k]]);
      }
      YAML::Emitter out;
      out << point;
      sweep.points.push_back({stem + " #" + std::to_string(sweep.points.size() + 1) + ": " + settings, std::string(out.c_str()) + "\n"});
      // The next combination: the last key varies fastest.
      more = false;
      for (std::size_t k = spec->grid.size(); k-- > 0;) {
        if (++pick[k] < spec->grid[k].values.size()) {
          more = true;
          break;
        }
        pick[k] = 0;
      }
    }
  }
  return sweep;
}

}  // namespace compactor::bench
