#include "serve/tenant.hpp"

#include "compactor/archive.hpp"

namespace compactor::serve {
namespace {

namespace http = boost::beast::http;

std::string_view header(const http::fields& headers, std::string_view name) {
  auto it = headers.find(name);
  return it == headers.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
}

// Gemini's `key` query parameter (its SDKs may send the key there instead of a header).
std::string_view query_key(std::string_view target) {
  std::size_t q = target.find('?');
  if (q == std::string_view::npos) return {};
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    if (pair.starts_with("key=")) return pair.substr(4);
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

}  // namespace

std::string_view bearer_token(const http::fields& headers) {
  std::string_view auth = header(headers, "authorization");
  return auth.size() > 7 && (auth.starts_with("Bearer ") || auth.starts_with("bearer ")) ? auth.substr(7) : std::string_view();
}

std::string_view proxy_header(const http::fields& headers) {
  for (std::string_view name : {"forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip", "via"})
    if (headers.find(name) != headers.end()) return name;
  return {};
}

std::string sha256_hex(std::string_view text) { return receipt_of(text).substr(7); }

std::string_view tenant_name(std::string_view tenant) { return tenant.empty() ? "default" : tenant; }

std::string tenant_of_key(std::string_view key) { return "key-" + sha256_hex(key).substr(0, 16); }

bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

Expected<std::string> identify_tenant(const std::vector<ServeClient>& clients, const http::fields& headers,
                                      std::string_view target, bool mcp) {
  if (!clients.empty()) {
    std::string_view token = header(headers, kTokenHeader);
    if (token.empty() && mcp) token = bearer_token(headers);
    if (token.empty())
      return Error{std::string("compactor serve: this server serves known clients only: send the token it issued you in "
                               "x-compactor-token") + (mcp ? " or Authorization: Bearer" : "")};
    // Every client is compared, so the time taken does not say which one nearly matched.
    const std::string digest = sha256_hex(token);
    const ServeClient* found = nullptr;
    for (const ServeClient& c : clients)
      if (same_secret(digest, c.token_sha256)) found = &c;
    if (found == nullptr) return Error{"compactor serve: the token sent is not one this server issued"};
    return found->name;
  }
  std::string_view key = header(headers, "x-api-key");
  if (key.empty()) key = header(headers, "x-goog-api-key");
  if (key.empty()) key = bearer_token(headers);
  if (key.empty()) key = query_key(target);
  if (key.empty()) return std::string();
  return tenant_of_key(key);
}

}  // namespace compactor::serve
