#include "compactor/param_schema.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

namespace compactor {

ParamSpec::ParamSpec(std::string name_, ParamType type_, std::string description_, std::optional<ParamValue> default_value_)
    : name(std::move(name_)), type(type_), description(std::move(description_)), default_value(std::move(default_value_)) {}

ParamSpec ParamSpec::integer(std::string name, std::string description, std::int64_t default_value) {
  return ParamSpec(std::move(name), ParamType::integer, std::move(description), ParamValue(default_value));
}
ParamSpec ParamSpec::number(std::string name, std::string description, double default_value) {
  return ParamSpec(std::move(name), ParamType::number, std::move(description), ParamValue(default_value));
}
ParamSpec ParamSpec::boolean(std::string name, std::string description, bool default_value) {
  return ParamSpec(std::move(name), ParamType::boolean, std::move(description), ParamValue(default_value));
}
ParamSpec ParamSpec::string(std::string name, std::string description, std::string default_value) {
  return ParamSpec(std::move(name), ParamType::string, std::move(description), ParamValue(std::move(default_value)));
}
ParamSpec ParamSpec::choice(std::string name, std::string description, std::string default_value, std::vector<std::string> choices) {
  ParamSpec spec(std::move(name), ParamType::choice, std::move(description), ParamValue(std::move(default_value)));
  spec.choices = std::move(choices);
  return spec;
}
ParamSpec ParamSpec::required(ParamType type, std::string name, std::string description) {
  return ParamSpec(std::move(name), type, std::move(description), std::nullopt);
}
ParamSpec ParamSpec::at_least(double bound) const {
  ParamSpec spec = *this;
  spec.min = bound;
  return spec;
}
ParamSpec ParamSpec::at_most(double bound) const {
  ParamSpec spec = *this;
  spec.max = bound;
  return spec;
}
ParamSpec ParamSpec::one_of(std::vector<std::string> values) const {
  ParamSpec spec = *this;
  spec.choices = std::move(values);
  return spec;
}

std::string_view to_string(ParamType type) {
  switch (type) {
    case ParamType::integer: return "integer";
    case ParamType::number: return "number";
    case ParamType::boolean: return "boolean";
    case ParamType::string: return "string";
    case ParamType::choice: return "choice";
  }
  return "?";
}

std::string to_string(const ParamValue& value) {
  if (auto i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (auto d = std::get_if<double>(&value)) return fmt::format("{}", *d);
  if (auto b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  return "\"" + std::get<std::string>(value) + "\"";
}

namespace {
std::string bound(double v) { return fmt::format("{}", v); }
}  // namespace

std::string ParamSpec::expectation() const {
  std::string kind;
  switch (type) {
    case ParamType::integer: kind = "an integer"; break;
    case ParamType::number: kind = "a number"; break;
    case ParamType::boolean: return "true or false";
    case ParamType::string: return "a string";
    case ParamType::choice: {
      std::string out = "one of";
      for (std::size_t i = 0; i < choices.size(); ++i) out += (i ? ", " : " ") + choices[i];
      return out;
    }
  }
  if (min && max) return kind + " from " + bound(*min) + " to " + bound(*max);
  if (min) return kind + " ≥ " + bound(*min);
  if (max) return kind + " ≤ " + bound(*max);
  return kind;
}

std::optional<std::string> ParamSpec::check(const ParamValue& value) const {
  double numeric = 0;
  switch (type) {
    case ParamType::integer:
      if (!std::holds_alternative<std::int64_t>(value)) return expectation();
      numeric = static_cast<double>(std::get<std::int64_t>(value));
      break;
    case ParamType::number:
      if (auto i = std::get_if<std::int64_t>(&value)) numeric = static_cast<double>(*i);
      else if (auto d = std::get_if<double>(&value)) numeric = *d;
      else return expectation();
      if (!std::isfinite(numeric)) return expectation();
      break;
    case ParamType::boolean:
      return std::holds_alternative<bool>(value) ? std::nullopt : std::optional(expectation());
    case ParamType::string:
      return std::holds_alternative<std::string>(value) ? std::nullopt : std::optional(expectation());
    case ParamType::choice: {
      auto s = std::get_if<std::string>(&value);
      if (s == nullptr) return expectation();
      for (const auto& c : choices)
        if (c == *s) return std::nullopt;
      return expectation();
    }
  }
  if ((min && numeric < *min) || (max && numeric > *max)) return expectation();
  return std::nullopt;
}

const ParamValue& ParamValues::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error("parameter \"" + name + "\" was not declared or has no value");
  return it->second;
}

std::int64_t ParamValues::integer(const std::string& name) const {
  const ParamValue& v = get(name);
  if (auto i = std::get_if<std::int64_t>(&v)) return *i;
  throw std::logic_error("parameter \"" + name + "\" is not an integer");
}

double ParamValues::number(const std::string& name) const {
  const ParamValue& v = get(name);
  if (auto i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (auto d = std::get_if<double>(&v)) return *d;
  throw std::logic_error("parameter \"" + name + "\" is not a number");
}

bool ParamValues::boolean(const std::string& name) const {
  const ParamValue& v = get(name);
  if (auto b = std::get_if<bool>(&v)) return *b;
  throw std::logic_error("parameter \"" + name + "\" is not a boolean");
}

const std::string& ParamValues::string(const std::string& name) const {
  const ParamValue& v = get(name);
  if (auto s = std::get_if<std::string>(&v)) return *s;
  throw std::logic_error("parameter \"" + name + "\" is not a string");
}

}  // namespace compactor
