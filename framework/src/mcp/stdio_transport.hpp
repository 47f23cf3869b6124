// MCP's stdio transport: the client starts the server and writes JSON-RPC messages to its
// standard input, one a line; the server writes each response as one line to its standard output
// and nothing else there (logs go to standard error). A thin loop around McpServer::handle, one
// session per process.
#pragma once

#include "mcp/mcp_server.hpp"

namespace compactor::mcp {

enum class StdioEnd {
  input_closed,  // the client closed the server's input: the normal end
  output_failed  // the client stopped reading (a write failed)
};

// Serves one session until its input ends. A line longer than McpServer::kMaxMessageBytes is
// skipped unbuffered and refused; blank lines are skipped.
StdioEnd serve_stdio(const McpServer& server, int in_fd = 0, int out_fd = 1);

}  // namespace compactor::mcp
