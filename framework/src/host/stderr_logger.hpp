// The host's StageLogger: spdlog to standard error, one line per message, prefixed with the
// stage's name. The level comes from COMPACTOR_LOG (debug, info, warn, error; default warn).
#pragma once

#include "compactor/error.hpp"
#include "compactor/stage_logger.hpp"

#include <memory>
#include <string>

namespace compactor {

std::unique_ptr<StageLogger> make_stderr_logger(std::string prefix);

// The level COMPACTOR_LOG names, or an error naming the variable and the levels: an unknown
// level used to silence every log without a word. Commands check it before they start.
Expected<LogLevel> log_level_from_environment();

}  // namespace compactor
