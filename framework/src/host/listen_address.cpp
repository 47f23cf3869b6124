#include "host/listen_address.hpp"

#include <boost/asio/ip/address.hpp>

#include <charconv>

namespace compactor {

namespace ip = boost::asio::ip;

Authority parse_authority(std::string_view text) {
  Authority a;
  std::string_view host = text, port;
  if (text.starts_with('[')) {
    std::size_t close = text.find(']');
    if (close == std::string_view::npos) return a;
    host = text.substr(0, close + 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return a;
      port = rest.substr(1);
    }
  } else if (std::size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) return a;
  if (!port.empty() || text.ends_with(':')) {
    unsigned p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p > 65535 || port.empty()) return a;
    a.port = p;
  }
  a.host = std::string(host);
  a.valid = true;
  return a;
}

bool is_loopback_host(std::string_view host) { return host == "127.0.0.1" || host == "[::1]" || host == "localhost"; }

Expected<ListenAddress> parse_listen_address(std::string_view text) {
  Authority a = parse_authority(text);
  const std::string expected = "expected HOST:PORT with an IPv4 or [IPv6] address or localhost, and a port 0 to 65535, got \"" +
                               std::string(text) + "\"";
  if (!a.valid || a.host.empty() || text.find(':') == std::string_view::npos) return Error{expected};
  ListenAddress out;
  out.host = a.host.starts_with('[') ? a.host.substr(1, a.host.size() - 2) : a.host;
  out.port = static_cast<unsigned short>(a.port);
  if (out.host != "localhost") {
    boost::system::error_code ec;
    ip::make_address(out.host, ec);
    if (ec) return Error{expected};
  }
  return out;
}

ip::tcp::endpoint ListenAddress::endpoint() const {
  return {ip::make_address(host == "localhost" ? "127.0.0.1" : host), port};
}

bool ListenAddress::loopback() const {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  ip::address a = ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

}  // namespace compactor
