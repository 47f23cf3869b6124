// Where serve listens (`serve.listen`: HOST:PORT, [IPV6]:PORT or localhost:PORT) and which hosts
// count as this machine's own loopback: exactly 127.0.0.1, ::1 and localhost, for the listen
// address, and for the Host and Origin headers /mcp accepts (a name that merely starts with
// "127." is someone else's).
#pragma once

#include "compactor/error.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <string>
#include <string_view>

namespace compactor {

struct ListenAddress {
  std::string host;  // as written, without brackets
  unsigned short port = 0;
  boost::asio::ip::tcp::endpoint endpoint() const;
  bool loopback() const;
};

// Parses HOST:PORT; the host must be an IPv4 or IPv6 address or `localhost` (no name lookup).
Expected<ListenAddress> parse_listen_address(std::string_view text);

// True for the loopback hosts above, in a Host or Origin header's form ("[::1]" bracketed).
bool is_loopback_host(std::string_view host);

// The host and port of an authority ("127.0.0.1:8088", "[::1]:8088", "localhost"); port 0 when
// none is given.
struct Authority {
  std::string host;  // brackets kept for IPv6
  unsigned port = 0;
  bool valid = false;
};
Authority parse_authority(std::string_view text);

}  // namespace compactor
