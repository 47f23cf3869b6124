// The logging interface the host gives each stage. It is the host's (implemented with spdlog);
// a stage never sees spdlog objects, so a plugin cannot depend on the host's logger setup.
#pragma once

#include <string_view>

namespace compactor {

enum class LogLevel { debug, info, warn, error };

class StageLogger {
 public:
  virtual ~StageLogger() = default;
  virtual void log(LogLevel level, std::string_view message) = 0;

  void debug(std::string_view m) { log(LogLevel::debug, m); }
  void info(std::string_view m) { log(LogLevel::info, m); }
  void warn(std::string_view m) { log(LogLevel::warn, m); }
  void error(std::string_view m) { log(LogLevel::error, m); }
};

}  // namespace compactor
