#include "host/yaml_reader.hpp"

#include <charconv>
#include <map>
#include <string_view>

namespace compactor::detail {
namespace {

bool is_quoted(const YAML::Node& n) { return n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str"; }

bool yaml11_boolean(const std::string& s) {
  static const char* words[] = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE",
                                "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"};
  for (const char* w : words)
    if (s == w) return true;
  return false;
}
bool yaml_null(const std::string& s) { return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL"; }
// Scalars are classified by hand, in one pass: std::regex recurses per character and a number of
// ~30,000 digits overflowed the stack.
bool all_of(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_octal(char c) { return c >= '0' && c <= '7'; }
std::string_view without_sign(std::string_view s) {
  return !s.empty() && (s[0] == '-' || s[0] == '+') ? s.substr(1) : s;
}
// [-+]?[0-9]+
bool decimal_integer(std::string_view s) { return all_of(without_sign(s), is_digit); }
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool decimal_number(std::string_view s) {
  s = without_sign(s);
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t from = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    return i - from;
  };
  std::size_t whole = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0 && whole == 0) return false;
  } else if (whole == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}
bool special_float(std::string_view s) {
  std::string_view v = without_sign(s);
  if (v == ".inf" || v == ".Inf" || v == ".INF") return true;
  return s == ".nan" || s == ".NaN" || s == ".NAN";
}
bool based_integer(std::string_view s) {
  if (s.size() > 2 && s.substr(0, 2) == "0x") return all_of(s.substr(2), is_hex);
  if (s.size() > 2 && s.substr(0, 2) == "0o") return all_of(s.substr(2), is_octal);
  return false;
}
// What a YAML 1.2 core schema reads as a number.
bool yaml_number(std::string_view s) { return decimal_number(s) || special_float(s) || based_integer(s); }

// A scalar of thousands of characters is named by its start and length: one line stays short.
std::string shown(const std::string& s) {
  if (s.size() <= 64) return s;
  return s.substr(0, 32) + "… (" + std::to_string(s.size()) + " characters)";
}

}  // namespace

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

SourceLocation YamlReader::location(const YAML::Node& node) const {
  YAML::Mark m = node.Mark();
  return SourceLocation{file_, m.line < 0 ? 1 : m.line + 1, m.column < 0 ? 1 : m.column + 1};
}

void YamlReader::error(const YAML::Node& at, const std::string& path, const std::string& what) {
  error(location(at), path, what);
}

void YamlReader::error(const SourceLocation& at, const std::string& path, const std::string& what) {
  errors_.push_back(at.to_string() + ": " + (path.empty() ? "" : path + ": ") + what);
}

std::string YamlReader::describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return "nothing";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a sequence";
    case YAML::NodeType::Scalar: break;
  }
  std::string text = shown(node.Scalar());
  if (is_quoted(node)) return "the quoted string \"" + text + "\"";
  return "\"" + text + "\"";
}

bool YamlReader::check_mapping(const YAML::Node& node, const std::string& path, const std::vector<std::string>& allowed) {
  if (!node.IsMap()) {
    error(node, path, "expected a mapping, got " + describe(node));
    return false;
  }
  std::map<std::string, SourceLocation> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
    std::string key_path = join_path(path, key);
    if (auto [pos, inserted] = seen.emplace(key, location(it->first)); !inserted) {
      error(it->first, key_path, "duplicate key (first at line " + std::to_string(pos->second.line) + ")");
      continue;
    }
    bool known = false;
    for (const auto& a : allowed) known |= a == key;
    if (!known) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      error(it->first, key_path, "unknown key; expected one of: " + list);
    }
  }
  return true;
}

std::optional<YAML::Node> YamlReader::member(const YAML::Node& map, const std::string& path, const std::string& key,
                                              bool required) {
  // Iterate rather than map[key]: operator[] on a const node is fine, but iteration also sees
  // the first of duplicate keys, which check_mapping has reported.
  for (auto it = map.begin(); it != map.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == key) return it->second;
  if (required) error(map, path, "missing required key \"" + key + "\"");
  return std::nullopt;
}

std::optional<std::int64_t> YamlReader::integer(const YAML::Node& node, const std::string& path, std::int64_t min,
                                                 std::int64_t max) {
  ParamSpec spec = ParamSpec::required(ParamType::integer, path, "").at_least(static_cast<double>(min));
  if (max != INT64_MAX) spec = spec.at_most(static_cast<double>(max));
  auto v = param(node, path, spec);
  if (!v) return std::nullopt;
  return std::get<std::int64_t>(*v);
}

std::optional<std::string> YamlReader::string(const YAML::Node& node, const std::string& path) {
  const ParamSpec spec = ParamSpec::required(ParamType::string, path, "");
  auto v = param(node, path, spec);
  if (!v) return std::nullopt;
  return std::get<std::string>(*v);
}

std::optional<std::string> YamlReader::choice(const YAML::Node& node, const std::string& path,
                                              const std::vector<std::string>& choices) {
  const ParamSpec spec = ParamSpec::required(ParamType::choice, path, "").one_of(choices);
  auto v = param(node, path, spec);
  if (!v) return std::nullopt;
  return std::get<std::string>(*v);
}

std::optional<ParamValue> YamlReader::param(const YAML::Node& node, const std::string& path, const ParamSpec& spec) {
  auto fail = [&](const std::string& got) -> std::optional<ParamValue> {
    error(node, path, "expected " + spec.expectation() + ", got " + got);
    return std::nullopt;
  };
  if (!node.IsScalar()) return fail(describe(node));
  const std::string& s = node.Scalar();
  bool quoted = is_quoted(node);
  ParamValue value;
  switch (spec.type) {
    case ParamType::integer: {
      if (quoted || !decimal_integer(s)) return fail(describe(node));
      std::int64_t i = 0;
      const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
      auto [end, ec] = std::from_chars(begin, s.data() + s.size(), i);
      if (ec != std::errc() || end != s.data() + s.size()) return fail(describe(node) + " (out of range)");
      value = i;
      break;
    }
    case ParamType::number: {
      if (quoted || !decimal_number(s)) return fail(describe(node));
      const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
      const char* end = s.data() + s.size();
      std::int64_t i = 0;
      double d = 0;
      if (auto r = std::from_chars(begin, end, i); decimal_integer(s) && r.ec == std::errc() && r.ptr == end) {
        value = i;
      } else if (auto f = std::from_chars(begin, end, d); f.ec == std::errc() && f.ptr == end) {
        value = d;  // also an integer beyond 64 bits
      } else {
        return fail(describe(node) + " (out of range)");
      }
      break;
    }
    case ParamType::boolean:
      if (quoted) return fail(describe(node));
      if (s == "true") {
        value = true;
      } else if (s == "false") {
        value = false;
      } else if (yaml11_boolean(s)) {
        return fail("\"" + s + "\" (YAML 1.1 booleans are not accepted; write true or false)");
      } else {
        return fail(describe(node));
      }
      break;
    case ParamType::string:
    case ParamType::choice:
      if (!quoted) {
        if (yaml11_boolean(s)) return fail(s + ", which YAML 1.1 reads as a boolean; quote it: \"" + s + "\"");
        if (yaml_null(s)) return fail("nothing");
        if (yaml_number(s)) return fail("the number " + shown(s) + "; quote it if you mean the string");
      }
      value = s;
      break;
  }
  if (auto expected = spec.check(value)) return fail(describe(node));
  return value;
}

}  // namespace compactor::detail
