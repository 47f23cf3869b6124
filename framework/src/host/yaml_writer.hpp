// The YAML print-pipeline writes, value by value: what it prints reads back as the same config.
#pragma once

#include "compactor/param_schema.hpp"

#include <string>

namespace compactor::detail {

// A YAML double-quoted string (JSON escaping is valid YAML).
std::string quoted(const std::string& s);

// A param's value as YAML: a number keeps a point (1.0), a string is quoted.
std::string yaml_value(const ParamValue& v);

// `params:` at `indent`, one param a line (`params: {}` when there is none).
void print_params(std::string& out, const std::string& indent, const ParamValues& params);

// Paths the config resolved against its own folder, printed absolute: the printed pipeline is
// read again from wherever it is saved, and from any working folder.
std::string absolute_path(const std::string& path);

}  // namespace compactor::detail
