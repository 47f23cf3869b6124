// An MCP tool: what `tools/list` shows of it and what `tools/call` runs. A tool's own failures
// (a bad argument, an unknown receipt) are results with isError set, which the model reads and
// can act on; only a call the protocol cannot carry out (no such tool, no name) is a JSON-RPC
// error.
#pragma once

#include <boost/json.hpp>

#include <functional>
#include <string>

namespace compactor::mcp {

struct ToolResult {
  boost::json::array content;  // MCP content items: {"type":"text","text":…}, {"type":"image",…}
  bool is_error = false;

  static ToolResult text(std::string text);
  static ToolResult error(std::string text);
};

struct Tool {
  std::string name;         // [A-Za-z0-9_.-], what the model calls
  std::string title;        // for people
  std::string description;  // for the model: short and exact
  boost::json::object input_schema;
  bool read_only = true;    // annotations.readOnlyHint
  std::function<ToolResult(const boost::json::object& arguments)> call;
};

}  // namespace compactor::mcp
