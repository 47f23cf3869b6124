// TEST ONLY: a team's own built-in checker and summarizing stage (team_checks.cpp), registered
// from this program's main as the host registers its own: the checker runs in check, import, run
// and bench with no config naming it, and the bench counts the stage's summaries.
#pragma once

#include "compactor/checker.hpp"
#include "compactor/stage.hpp"

namespace compactor::test {

// `team_no_secrets`: no text block holds the team's secret marker (GATEWAY-SECRET).
CheckerInfo team_no_secrets_checker();

// `team_summary`: summarizes all but the newest exchanges (StageInfo::summarizes).
StageInfo team_summary_stage();

}  // namespace compactor::test
