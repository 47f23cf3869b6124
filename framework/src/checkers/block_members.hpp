// The members the Messages API takes in each block type it defines. It refuses any other member
// in such a block ("messages.1.content.0.tool_use.index: Extra inputs are not permitted"): the
// structure checker says so with the rule, and the importers leave such a member out, counting it.
// A block of a type not listed here (a server tool's, one the API added since) passes unread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace compactor {

// Null for a type the list does not define.
const std::vector<std::string_view>* api_block_members(std::string_view type);

// The rule as a refusal names it: "a tool_use block has only type, id, name, input, cache_control
// and caller".
std::string block_members_rule(std::string_view type);

}  // namespace compactor
