#include "pricing/price_table.hpp"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <set>

namespace compactor {

double ModelPrice::cost(std::uint64_t uncached_input, std::uint64_t cache_write_tokens, std::uint64_t cache_read_tokens,
                        std::uint64_t output_tokens) const {
  return (static_cast<double>(uncached_input) * input + static_cast<double>(cache_write_tokens) * cache_write +
          static_cast<double>(cache_read_tokens) * cache_read + static_cast<double>(output_tokens) * output) /
         1e6;
}

ModelPrice ModelPrice::with_cache_lifetime(std::uint64_t lifetime_s) const {
  ModelPrice p = *this;
  p.cache_lifetime_s = lifetime_s;
  if (lifetime_s > 300) p.cache_write = cache_write_1h;
  return p;
}

namespace {

// The longest family name that is a word of `model`: bounded on both sides by the id's ends or by
// a character that is not a letter or digit (`claude-opus-5`, `anthropic/claude-sonnet-4.5`).
std::string_view family_in(const std::vector<ModelPrice>& models, std::string_view model) {
  auto boundary = [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); };
  std::string_view best;
  for (const ModelPrice& m : models) {
    if (m.family.size() <= best.size()) continue;
    for (std::size_t at = model.find(m.family); at != std::string_view::npos; at = model.find(m.family, at + 1)) {
      const std::size_t end = at + m.family.size();
      if ((at == 0 || boundary(model[at - 1])) && (end == model.size() || boundary(model[end]))) {
        best = m.family;
        break;
      }
    }
  }
  return best;
}

// The entry a name or a `match` prefix finds (the longest prefix wins), or nullptr.
const ModelPrice* by_prefix(const std::vector<ModelPrice>& models, std::string_view model) {
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
  return best;
}

const ModelPrice* first_of_family(const std::vector<ModelPrice>& models, std::string_view family) {
  for (const ModelPrice& m : models)
    if (m.family == family) return &m;
  return nullptr;
}

std::uint64_t smallest_window(const std::vector<ModelPrice>& models, std::string_view family) {
  std::uint64_t smallest = 0;
  for (const ModelPrice& m : models)
    if (m.family == family && m.context_window > 0 && (smallest == 0 || m.context_window < smallest)) smallest = m.context_window;
  return smallest;
}

}  // namespace

const ModelPrice* PriceTable::find(std::string_view model) const {
  if (const ModelPrice* m = by_prefix(models, model)) return m;
  if (const ModelPrice* m = first_of_family(models, model)) return m;
  std::string_view family = family_in(models, model);
  return family.empty() ? nullptr : first_of_family(models, family);
}

std::optional<ModelWindow> PriceTable::window_of(std::string_view model) const {
  const ModelPrice* exact = model.empty() ? nullptr : by_prefix(models, model);
  if (exact != nullptr && exact->context_window > 0) return ModelWindow{exact->context_window, exact, exact->name};
  std::string family = exact != nullptr ? exact->family : std::string(model.empty() ? std::string_view() : family_in(models, model));
  if (family.empty() && !model.empty() && first_of_family(models, model) != nullptr) family = std::string(model);
  if (!family.empty()) {
    if (std::uint64_t tokens = smallest_window(models, family); tokens > 0)
      return ModelWindow{tokens, exact != nullptr ? exact : first_of_family(models, family), "the " + family + " family's smallest"};
  }
  const ModelPrice* fallback = default_model.empty() ? nullptr : by_prefix(models, default_model);
  if (fallback == nullptr || fallback->context_window == 0) return std::nullopt;
  return ModelWindow{fallback->context_window, fallback, fallback->name + ", the table's default model"};
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
  // An optional non-negative integer written as a plain scalar.
  Expected<std::optional<std::uint64_t>> count(const YAML::Node& parent, const std::string& key, const std::string& where) const {
    const YAML::Node n = parent[key];
    if (!n) return std::optional<std::uint64_t>();
    unsigned long long value = 0;
    if (!n.IsScalar() || n.Tag() == "!" || !YAML::convert<unsigned long long>::decode(n, value))
      return at(n, where + "." + key + ": expected a non-negative integer, got \"" + (n.IsScalar() ? n.Scalar() : std::string("a collection")) +
                       "\"");
    return std::optional<std::uint64_t>(value);
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
  if (auto u = unknown_key(r, root, {"version", "source", "date", "window_source", "window_date", "default_model", "models"}, ""); !u)
    return u.error();
  if (!root["version"] || !root["version"].IsScalar() || root["version"].Scalar() != "1") return r.at(root, "version: expected 1");
  PriceTable table;
  auto source = r.text(root, "source", "price table");
  if (!source) return source.error();
  auto date = r.text(root, "date", "price table");
  if (!date) return date.error();
  table.source = *source;
  table.date = *date;
  if (root["window_source"] || root["window_date"]) {
    auto window_source = r.text(root, "window_source", "price table");
    if (!window_source) return window_source.error();
    auto window_date = r.text(root, "window_date", "price table");
    if (!window_date) return window_date.error();
    table.window_source = *window_source;
    table.window_date = *window_date;
  }
  const YAML::Node models = root["models"];
  if (!models || !models.IsMap() || models.size() == 0) return r.at(models ? models : root, "models: expected a mapping of model entries");
  for (const auto& entry : models) {
    ModelPrice m;
    m.name = entry.first.Scalar();
    const YAML::Node& e = entry.second;
    const std::string where = "models." + m.name;
    if (!e.IsMap()) return r.at(e, where + ": expected a mapping (family, match, input, cache_write, cache_read, output)");
    if (auto u = unknown_key(r, e, {"family", "match", "input", "cache_write", "cache_read", "output", "min_cacheable_tokens",
                                       "cache_lifetime_s", "context_window", "cache_write_1h"}, where); !u)
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
    m.cache_write_1h = m.cache_write;
    if (e["cache_write_1h"]) {
      auto v = r.price(e, "cache_write_1h", where);
      if (!v) return v.error();
      m.cache_write_1h = *v;
    }
    for (auto [key, field] : {std::pair{"min_cacheable_tokens", &m.min_cacheable_tokens}, std::pair{"cache_lifetime_s", &m.cache_lifetime_s},
                              std::pair{"context_window", &m.context_window}})
      if (auto v = r.count(e, key, where); !v) return v.error();
      else if (*v) *field = **v;
    if (m.context_window > 0 && table.window_source.empty())
      return r.at(e["context_window"], where + ".context_window: the table gives windows without window_source and window_date");
    table.models.push_back(std::move(m));
  }
  if (const YAML::Node d = root["default_model"]) {
    if (!d.IsScalar() || table.find(d.Scalar()) == nullptr) return r.at(d, "default_model: not one of the models");
    table.default_model = d.Scalar();
  }
  return table;
}

}  // namespace compactor
