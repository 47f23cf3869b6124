#include "serve/client_connection.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace compactor::serve {

namespace http = boost::beast::http;

void respond(ClientConnection& client, int status, const std::string& body, const std::string& content_type,
             const Headers& extra) {
  http::response<http::string_body> res{static_cast<http::status>(status), client.version};
  res.set(http::field::content_type, content_type);
  for (const auto& [k, v] : extra) res.set(k, v);
  res.keep_alive(client.keep_alive);
  res.body() = body;
  res.prepare_payload();
  boost::beast::error_code ec;
  http::write(client.socket, res, ec);
  if (ec) client.broken = true;
}

std::string header_safe(std::string text) {
  for (char& c : text)
    if (c == '\r' || c == '\n' || static_cast<unsigned char>(c) < 0x20) c = ' ';
  if (text.size() > 300) text.resize(300);
  return text;
}

}  // namespace compactor::serve
