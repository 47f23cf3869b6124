// unique_call_ids: every tool call has a non-empty string id, unique in the history, so that
// each result names one call. The rule of the APIs whose ids have no pattern (Chat Completions,
// Responses, Gemini); the Messages API's own `unique_ids` adds its pattern.
#pragma once

#include "compactor/checker.hpp"

namespace compactor::wire {

CheckerPtr make_unique_call_ids_checker();

}  // namespace compactor::wire
