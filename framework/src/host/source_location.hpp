// Where in a config file a value was written: every config error and warning starts with it.
#pragma once

#include <string>

namespace compactor {

struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based
  int column = 0;  // 1-based
  std::string to_string() const { return file + ":" + std::to_string(line) + ":" + std::to_string(column); }
};

}  // namespace compactor
