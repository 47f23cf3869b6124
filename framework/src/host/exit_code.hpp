// The documented exit codes of the `compactor` command line (README.md, "Exit codes").
#pragma once

namespace compactor {

enum ExitCode : int {
  kExitOk = 0,           // ok, within budget
  kExitNotDone = 1,      // ran, but still over budget, or a stage rejected/declined under abort
  kExitBadInput = 2,     // bad input or bad config (nothing written)
  kExitPluginError = 3,  // plugin failure (ABI refusal, exception) or internal error
};

}  // namespace compactor
