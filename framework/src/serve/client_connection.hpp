// One client connection of the server: a socket used synchronously by the thread that serves it,
// and the answers the server writes itself.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <string>
#include <utility>
#include <vector>

namespace compactor::serve {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct ClientConnection {
  boost::asio::ip::tcp::socket& socket;
  unsigned version = 11;
  bool keep_alive = true;
  bool broken = false;  // a write failed, or a response was cut: the connection is closed after it
};

// Writes a whole response the server makes itself (not the upstream's).
void respond(ClientConnection& client, int status, const std::string& body, const std::string& content_type,
             const Headers& extra = {});

// A header value kept to one line of at most 300 chars (a warning quotes an error).
std::string header_safe(std::string text);

}  // namespace compactor::serve
