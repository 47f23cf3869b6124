// The archive's MCP server as `compactor mcp` (stdio) and `serve`'s `/mcp` (Streamable HTTP) both
// offer it: the restore and search tools over one absolute archive folder, with the server's name
// and the instructions the model reads.
#pragma once

#include "mcp/archive_tools.hpp"
#include "mcp/mcp_server.hpp"

#include <memory>
#include <string>

namespace compactor::mcp {

class ArchiveServer {
 public:
  // `dir`: the archive folder, absolute; `version`: the software's, for serverInfo.
  ArchiveServer(std::string dir, std::string version);
  // Over `tools` (a store's, a tenant's).
  ArchiveServer(std::unique_ptr<ArchiveTools> tools, std::string version);

  const McpServer& server() const { return server_; }
  const std::string& dir() const { return tools_->dir(); }

 private:
  std::unique_ptr<ArchiveTools> tools_;  // the tools call it: a stable address
  McpServer server_;
};

}  // namespace compactor::mcp
