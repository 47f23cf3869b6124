#include "pricing/price_table.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>

namespace compactor {

double ModelPrice::cost(std::uint64_t uncached_input, std::uint64_t cache_write_tokens, std::uint64_t cache_read_tokens,
                        std::uint64_t output_tokens) const {
  return (static_cast<double>(uncached_input) * input + static_cast<double>(cache_write_tokens) * cache_write +
          static_cast<double>(cache_read_tokens) * cache_read + static_cast<double>(output_tokens) * output) /
         1e6;
}

const ModelPrice* PriceTable::find(std::string_view model) const {
  const ModelPrice* best = nullptr;
  std::size_t best_length = 0;
  for (const ModelPrice& m : models) {
    if (m.name == model) return &m;
    for (const std::string& prefix : m.match)
      if (model.substr(0, prefix.size()) == prefix && prefix.size() > best_length) {
        best = &m;
        best_length = prefix.size();
      }
  }
  if (best != nullptr) return best;
  for (const ModelPrice& m : models)
    if (m.family == model) return &m;
  return nullptr;
}

namespace {

// yaml-cpp gives no location for a missing key, so errors name the parent's mark.
struct Reader {
  const std::string& path;
  Error at(const YAML::Node& n, const std::string& what) const {
    return Error{path + ":" + std::to_string(n.Mark().line + 1) + ":" + std::to_string(n.Mark().column + 1) + ": " + what};
  }
  // A finite, non-negative number written as a plain (unquoted) scalar.
  Expected<double> price(const YAML::Node& parent, const std::string& key, const std::string& where) const {
    const YAML::Node n = parent[key];
    if (!n) return at(parent, where + ": missing \"" + key + "\" (USD per million tokens)");
    double value = -1;
    if (!n.IsScalar() || n.Tag() == "!" || !YAML::convert<double>::decode(n, value) || !std::isfinite(value) || value < 0)
      return at(n, where + "." + key + ": expected a non-negative number (USD per million tokens), got \"" +
                       (n.IsScalar() ? n.Scalar() : std::string("a collection")) + "\"");
    return value;
  }
  Expected<std::string> text(const YAML::Node& parent, const std::string& key, const std::string& where) const {
    const YAML::Node n = parent[key];
    if (!n) return at(parent, where + ": missing \"" + key + "\"");
    if (!n.IsScalar() || n.Scalar().empty()) return at(n, where + "." + key + ": expected a non-empty string");
    return n.Scalar();
  }
};

Expected<std::string> unknown_key(const Reader& r, const YAML::Node& map, const std::set<std::string>& known,
                                  const std::string& where) {
  for (const auto& kv : map)
    if (!known.count(kv.first.Scalar())) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return r.at(kv.first, where + (where.empty() ? "" : ".") + kv.first.Scalar() + ": unknown key; expected one of " + list);
    }
  return std::string();
}

}  // namespace

Expected<PriceTable> read_price_table(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return Error{path + ": cannot read the price table"};
  } catch (const YAML::Exception& e) {
    return Error{path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": " + e.msg};
  }
  Reader r{path};
  if (!root.IsMap()) return Error{path + ": expected a price table (a mapping with version, source, date, models)"};
  if (auto u = unknown_key(r, root, {"version", "source", "date", "default_model", "models"}, ""); !u) return u.error();
  if (!root["version"] || !root["version"].IsScalar() || root["version"].Scalar() != "1") return r.at(root, "version: expected 1");
  PriceTable table;
  auto source = r.text(root, "source", "price table");
  if (!source) return source.error();
  auto date = r.text(root, "date", "price table");
  if (!date) return date.error();
  table.source = *source;
  table.date = *date;
  const YAML::Node models = root["models"];
  if (!models || !models.IsMap() || models.size() == 0) return r.at(models ? models : root, "models: expected a mapping of model entries");
  for (const auto& entry : models) {
    ModelPrice m;
    m.name = entry.first.Scalar();
    const YAML::Node& e = entry.second;
    const std::string where = "models." + m.name;
    if (!e.IsMap()) return r.at(e, where + ": expected a mapping (family, match, input, cache_write, cache_read, output)");
    if (auto u = unknown_key(r, e, {"family", "match", "input", "cache_write", "cache_read", "output", "min_cacheable_tokens"}, where); !u)
      return u.error();
    auto family = r.text(e, "family", where);
    if (!family) return family.error();
    m.family = *family;
    if (const YAML::Node match = e["match"]) {
      if (!match.IsSequence()) return r.at(match, where + ".match: expected a list of model-id prefixes");
      for (const auto& p : match) {
        if (!p.IsScalar() || p.Scalar().empty()) return r.at(p, where + ".match: expected a non-empty model-id prefix");
        m.match.push_back(p.Scalar());
      }
    }
    for (auto [key, field] : {std::pair{"input", &m.input}, std::pair{"cache_write", &m.cache_write},
                              std::pair{"cache_read", &m.cache_read}, std::pair{"output", &m.output}}) {
      auto v = r.price(e, key, where);
      if (!v) return v.error();
      *field = *v;
    }
    if (const YAML::Node n = e["min_cacheable_tokens"]) {
      unsigned long long tokens = 0;
      if (!n.IsScalar() || n.Tag() == "!" || !YAML::convert<unsigned long long>::decode(n, tokens))
        return r.at(n, where + ".min_cacheable_tokens: expected a non-negative integer, got \"" +
                           (n.IsScalar() ? n.Scalar() : std::string("a collection")) + "\"");
      m.min_cacheable_tokens = tokens;
    }
    table.models.push_back(std::move(m));
  }
  if (const YAML::Node d = root["default_model"]) {
    if (!d.IsScalar() || table.find(d.Scalar()) == nullptr) return r.at(d, "default_model: not one of the models");
    table.default_model = d.Scalar();
  }
  return table;
}

}  // namespace compactor
