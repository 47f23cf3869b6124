// The URL a request goes to: the scheme, host and port come from the configured upstream only;
// the client's request target adds a path and a query under the upstream's own path. A target
// that is not origin-form (it must start with "/") is refused: "@10.0.0.5:8443/admin" appended
// to "http://api.example" would name another host. Built with libcurl's URL API, which also
// refuses a scheme other than http and https.
//
// The path must also stay under the upstream's own path: a target with a dot segment ("." or
// "..") is refused, spelled plainly or percent-encoded (%2e, any case), and so is one whose
// encoded slash or backslash (%2f, %5c), or a plain backslash, would make one: curl, a gateway
// or the upstream itself may remove dot segments or decode before routing, and
// "/../../admin" under "http://host/gw/anthropic" would then reach "/admin". curl is told to
// send the path as built (CURLOPT_PATH_AS_IS), so nothing normalises it on the way.
#pragma once

#include "compactor/error.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace compactor::serve {

Expected<std::string> upstream_url(std::string_view upstream, std::string_view target);

// Why a request target cannot be forwarded (not origin-form, or a path that could leave the
// upstream's base path), or nothing.
std::optional<std::string> target_refusal(std::string_view target);

// Whether a configured upstream base URL is one serve can forward to (http or https, a host).
bool is_upstream_base(std::string_view url);

}  // namespace compactor::serve
