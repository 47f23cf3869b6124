// One broken rule, found by a checker: which rule (the checker's name), where (messages.N of the
// candidate and the tool_use ids involved) and what is wrong. A checker builds one from the rule
// and the message, then says where when it knows:
//   out.push_back(Violation::of(name(), "the first message was replaced").at(0));
// When it reports a stage's candidate, the host adds which stage and plugin file produced it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

struct Violation {
  std::string checker;                       // the rule: "pairing"
  std::optional<std::size_t> message_index;  // messages.N of the candidate
  std::vector<std::string> ids;              // tool_use ids involved
  std::string what;                          // what is wrong, in the API's words where it has them

  static Violation of(std::string_view checker, std::string what);
  // Where: on a temporary, the violation itself (`Violation::of(…).at(3)`); on a variable, that
  // variable, changed (`v.at(3).with_ids({"toolu_1"})`).
  Violation at(std::size_t index) &&;
  Violation& at(std::size_t index) &;
  Violation with_ids(std::vector<std::string> tool_use_ids) &&;
  Violation& with_ids(std::vector<std::string> tool_use_ids) &;

  // "pairing: messages.3: tool_use ids were found without tool_result blocks immediately after:
  // toolu_1", on one line whatever the message holds.
  std::string to_string() const;
};

}  // namespace compactor
