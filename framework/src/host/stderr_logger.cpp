#include "host/stderr_logger.hpp"

#include <fmt/format.h>  // libfmt's declarations keep their default visibility
// spdlog is compiled here, header-only; its code stays private to the framework instead of
// joining the symbols every plugin load searches.
#pragma GCC visibility push(hidden)
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#pragma GCC visibility pop

#include <cstdlib>

namespace compactor {
namespace {

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
  }
  return spdlog::level::warn;
}

std::shared_ptr<spdlog::logger> shared_logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_logger_st("compactor");
    l->set_pattern("compactor: %l: %v");
    auto level = log_level_from_environment();  // commands refuse a bad one before they start
    l->set_level(to_spdlog(level ? *level : LogLevel::warn));
    return l;
  }();
  return logger;
}

class StderrLogger final : public StageLogger {
 public:
  explicit StderrLogger(std::string prefix) : prefix_(std::move(prefix)), logger_(shared_logger()) {}
  void log(LogLevel level, std::string_view message) override {
    logger_->log(to_spdlog(level), "{}{}", prefix_, message);
  }

 private:
  std::string prefix_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace

Expected<LogLevel> log_level_from_environment() {
  const char* text = std::getenv("COMPACTOR_LOG");
  if (text == nullptr || *text == '\0') return LogLevel::warn;
  std::string_view level = text;
  if (level == "debug") return LogLevel::debug;
  if (level == "info") return LogLevel::info;
  if (level == "warn") return LogLevel::warn;
  if (level == "error") return LogLevel::error;
  return Error{"COMPACTOR_LOG: unknown level \"" + std::string(level) + "\"; expected debug, info, warn or error"};
}

std::unique_ptr<StageLogger> make_stderr_logger(std::string prefix) { return std::make_unique<StderrLogger>(std::move(prefix)); }

}  // namespace compactor
