// One broken rule, found by a checker: what, where (messages.N and the ids) and, when the host
// checked a stage's candidate, which stage and plugin file produced it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace compactor {

struct Violation {
  std::string checker;                       // "pairing"
  std::optional<std::size_t> message_index;  // messages.N of the candidate
  std::vector<std::string> ids;              // tool_use ids involved
  std::string what;                          // the rule, in the API's words where it has them
  std::string stage;                         // set by the host
  std::string plugin_file;                   // set by the host

  // "pairing: messages.3: tool_use ids were found without tool_result blocks immediately after:
  // toolu_1 (stage split_pair, plugin /…/compactor_stage_split_pair.so)"
  std::string to_string() const;
};

}  // namespace compactor
