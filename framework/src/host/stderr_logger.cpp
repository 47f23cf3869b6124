#include "compactor/stderr_logger.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace compactor {
namespace {

std::shared_ptr<spdlog::logger> shared_logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_logger_st("compactor");
    l->set_pattern("compactor: %l: %v");
    const char* level = std::getenv("COMPACTOR_LOG");
    l->set_level(level != nullptr ? spdlog::level::from_str(level) : spdlog::level::warn);
    return l;
  }();
  return logger;
}

class StderrLogger final : public StageLogger {
 public:
  explicit StderrLogger(std::string prefix) : prefix_(std::move(prefix)), logger_(shared_logger()) {}
  void log(LogLevel level, std::string_view message) override {
    spdlog::level::level_enum l = spdlog::level::info;
    switch (level) {
      case LogLevel::debug: l = spdlog::level::debug; break;
      case LogLevel::info: l = spdlog::level::info; break;
      case LogLevel::warn: l = spdlog::level::warn; break;
      case LogLevel::error: l = spdlog::level::err; break;
    }
    logger_->log(l, "{}{}", prefix_, message);
  }

 private:
  std::string prefix_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace

std::unique_ptr<StageLogger> make_stderr_logger(std::string prefix) { return std::make_unique<StderrLogger>(std::move(prefix)); }

}  // namespace compactor
