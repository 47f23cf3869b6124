// The parameters a stage declares. The host validates the operator's YAML against this schema
// and hands the stage plain values, so no YAML node crosses the plugin boundary.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace compactor {

enum class ParamType { integer, number, boolean, string, choice };
std::string_view to_string(ParamType type);

using ParamValue = std::variant<std::int64_t, double, bool, std::string>;
std::string to_string(const ParamValue& value);

// Built by named factories, never by position, so a spec cannot be required and have a default:
//   ParamSpec::integer("keep_recent", "how many of the newest results stay whole", 3).at_least(0)
//   ParamSpec::required(ParamType::string, "model", "the model that writes summaries")
struct ParamSpec {
  static ParamSpec integer(std::string name, std::string description, std::int64_t default_value);
  static ParamSpec number(std::string name, std::string description, double default_value);
  static ParamSpec boolean(std::string name, std::string description, bool default_value);
  static ParamSpec string(std::string name, std::string description, std::string default_value);
  static ParamSpec choice(std::string name, std::string description, std::string default_value,
                          std::vector<std::string> choices);
  // No default: the config must give it (a choice's values come with one_of).
  static ParamSpec required(ParamType type, std::string name, std::string description);

  // Bounds of an integer or a number, inclusive; the values a required choice takes.
  ParamSpec at_least(double bound) const;
  ParamSpec at_most(double bound) const;
  ParamSpec one_of(std::vector<std::string> values) const;

  std::string name;
  ParamType type = ParamType::integer;
  std::string description;
  std::optional<ParamValue> default_value;  // used when the config leaves it out; none: required
  std::optional<double> min;                // integer and number
  std::optional<double> max;
  std::vector<std::string> choices;         // choice
  bool is_required() const { return !default_value.has_value(); }

  // What a valid value looks like, for error messages: "an integer from 1 to 100".
  std::string expectation() const;
  // Empty when `value` is valid for this spec, else the expectation.
  std::optional<std::string> check(const ParamValue& value) const;

 private:
  ParamSpec(std::string name, ParamType type, std::string description, std::optional<ParamValue> default_value);
};

using ParamSchema = std::vector<ParamSpec>;

// Validated values (defaults filled in), as the stage's factory receives them.
class ParamValues {
 public:
  void set(const std::string& name, ParamValue value) { values_[name] = std::move(value); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }

  // Typed reads of a parameter the schema declared; calling the wrong one is a stage bug and
  // throws std::logic_error (which the host turns into an error naming the stage).
  std::int64_t integer(const std::string& name) const;
  double number(const std::string& name) const;  // an integer value reads as a number too
  bool boolean(const std::string& name) const;
  const std::string& string(const std::string& name) const;

  const std::map<std::string, ParamValue>& all() const { return values_; }

 private:
  const ParamValue& get(const std::string& name) const;
  std::map<std::string, ParamValue> values_;
};

}  // namespace compactor
