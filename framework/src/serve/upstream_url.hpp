// The URL a request goes to: the scheme, host and port come from the configured upstream only;
// the client's request target adds a path and a query under the upstream's own path. A target
// that is not origin-form (it must start with "/") is refused: "@10.0.0.5:8443/admin" appended
// to "http://api.example" would name another host. Built with libcurl's URL API, which also
// refuses a scheme other than http and https.
#pragma once

#include "compactor/error.hpp"

#include <string>
#include <string_view>

namespace compactor::serve {

Expected<std::string> upstream_url(std::string_view upstream, std::string_view target);

// Whether a configured upstream base URL is one serve can forward to (http or https, a host).
bool is_upstream_base(std::string_view url);

}  // namespace compactor::serve
