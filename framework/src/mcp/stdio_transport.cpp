#include "mcp/stdio_transport.hpp"

#include <cerrno>
#include <string>
#include <unistd.h>

namespace compactor::mcp {
namespace {

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

}  // namespace

StdioEnd serve_stdio(const McpServer& server, int in_fd, int out_fd) {
  McpSession session;
  std::string line;        // the line being read, up to the bound
  bool overlong = false;   // the line being read passed the bound: skipped to its end
  char buffer[64 * 1024];
  auto answer = [&](std::string_view message) {
    std::optional<std::string> response = overlong ? McpServer::too_large() : server.handle(message, session);
    if (!response) return true;
    *response += '\n';
    return write_all(out_fd, *response);
  };
  for (;;) {
    ssize_t n = ::read(in_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // closed (or unreadable, which ends the session the same way)
    std::string_view chunk(buffer, static_cast<std::size_t>(n));
    while (!chunk.empty()) {
      std::size_t nl = chunk.find('\n');
      std::string_view piece = chunk.substr(0, nl);
      if (!overlong) {
        if (line.size() + piece.size() > McpServer::kMaxMessageBytes) {
          overlong = true;
          line.clear();
          line.shrink_to_fit();
        } else {
          line += piece;
        }
      }
      if (nl == std::string_view::npos) break;
      chunk.remove_prefix(nl + 1);
      if (overlong || !blank(line))
        if (!answer(line)) return StdioEnd::output_failed;
      line.clear();
      overlong = false;
    }
  }
  // A last message without its newline is still a message.
  if (overlong || !blank(line))
    if (!answer(line)) return StdioEnd::output_failed;
  return StdioEnd::input_closed;
}

}  // namespace compactor::mcp
