// Who a request is for. Every stored thing (continuity state, archived blobs) belongs to one
// tenant, and no look-up crosses tenants. A tenant is either
//  - a client of `serve.clients` ({name, token_sha256}), which presents the token serve issued
//    (`compactor serve-token`) in `x-compactor-token` (or, on /mcp, `Authorization: Bearer`); with
//    clients configured, a request without a known token is refused (401);
//  - with no clients configured, the API key the request forwards (x-api-key, x-goog-api-key,
//    Authorization: Bearer, or Gemini's `key` query parameter): `key-` and 16 hex digits of its
//    SHA-256, so the key itself is never stored;
//  - with neither, the default tenant (""), whose state and archive are the folder's own layout.
#pragma once

#include "compactor/error.hpp"
#include "host/serve_config.hpp"

#include <boost/beast/http/fields.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace compactor::serve {

struct TenantRefusal {
  std::string message;  // one line, for the client (never the token)
};

// The tenant of a request. `mcp`: the request is for /mcp, where the token may also come as a
// bearer token (/mcp has no upstream key of its own there).
Expected<std::string> identify_tenant(const std::vector<ServeClient>& clients, const boost::beast::http::fields& headers,
                                      std::string_view target, bool mcp);

// The tenant as logs and metrics name it: "default" for the default tenant ("").
std::string_view tenant_name(std::string_view tenant);

// The tenant of an API key: `key-` and 16 hex digits of its SHA-256.
std::string tenant_of_key(std::string_view key);

// The header that carries a client's token; serve never forwards it upstream.
inline constexpr std::string_view kTokenHeader = "x-compactor-token";

// SHA-256 of `text`, 64 lowercase hex digits.
std::string sha256_hex(std::string_view text);

// Compares two secrets in time that does not depend on where they differ.
bool same_secret(std::string_view a, std::string_view b);

// The header that says a proxy forwarded the request (forwarded, x-forwarded-for,
// x-forwarded-host, x-real-ip, via), or nothing. A proxy on this machine makes every caller look
// local and may send any Host: such a request is remote.
std::string_view proxy_header(const boost::beast::http::fields& headers);

// The bearer token of an Authorization header, or nothing.
std::string_view bearer_token(const boost::beast::http::fields& headers);

}  // namespace compactor::serve
