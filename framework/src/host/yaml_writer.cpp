#include "host/yaml_writer.hpp"

#include <fmt/core.h>

#include <filesystem>

namespace compactor::detail {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", c);
        else out += c;
    }
  }
  return out + "\"";
}

std::string yaml_value(const ParamValue& v) {
  if (auto i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto d = std::get_if<double>(&v)) {
    std::string s = fmt::format("{}", *d);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  if (auto b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return quoted(std::get<std::string>(v));
}

void print_params(std::string& out, const std::string& indent, const ParamValues& params) {
  if (params.all().empty()) {
    out += indent + "params: {}\n";
    return;
  }
  out += indent + "params:\n";
  for (const auto& [name, value] : params.all()) out += indent + "  " + name + ": " + yaml_value(value) + "\n";
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

}  // namespace compactor::detail
