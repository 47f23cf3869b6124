// The types the Messages API defines for the fields of each block type Compactor knows, and for
// a request body's `system` and `tools`. A wrong type is refused by the API, so it is refused on
// input and in every message a stage builds, one line per field.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <initializer_list>

#include <string>
#include <vector>

namespace compactor::detail {

// The JSON kind as the error lines name it: null, boolean, number, string, array, object.
std::string_view json_kind(const boost::json::value& v);

// The members of a wire item `o` but the `known` ones its block has a field for: what an adapter
// carries in the block's `carried` member (or nothing).
boost::json::object foreign_members(const boost::json::object& o, std::initializer_list<std::string_view> known);

// Problems of one content block at `where` ("content.2"), each "where.field must be …, got …".
void block_field_problems(const boost::json::object& block, const std::string& where, std::vector<std::string>& out);

// A request body's top-level `system` (a string or an array of text blocks) and `tools` (an
// array of objects).
void system_field_problems(const boost::json::value& system, std::vector<std::string>& out);
void tools_field_problems(const boost::json::value& tools, std::vector<std::string>& out);

}  // namespace compactor::detail
