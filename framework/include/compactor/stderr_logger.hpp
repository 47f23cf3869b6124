// The host's StageLogger: spdlog to standard error, one line per message, prefixed with the
// stage's name. The level comes from COMPACTOR_LOG (debug, info, warn, error; default warn).
#pragma once

#include "compactor/stage_logger.hpp"

#include <memory>
#include <string>

namespace compactor {

std::unique_ptr<StageLogger> make_stderr_logger(std::string prefix);

}  // namespace compactor
