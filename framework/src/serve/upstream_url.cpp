#include "serve/upstream_url.hpp"

#include <curl/curl.h>

#include <memory>

namespace compactor::serve {
namespace {

struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
using Url = std::unique_ptr<CURLU, UrlDeleter>;

std::string part_of(CURLU* u, CURLUPart part) {
  char* text = nullptr;
  if (curl_url_get(u, part, &text, 0) != CURLUE_OK || text == nullptr) return {};
  std::string out(text);
  curl_free(text);
  return out;
}

Url parsed_base(std::string_view upstream) {
  Url u(curl_url());
  if (!u || curl_url_set(u.get(), CURLUPART_URL, std::string(upstream).c_str(), 0) != CURLUE_OK) return nullptr;
  const std::string scheme = part_of(u.get(), CURLUPART_SCHEME);
  if ((scheme != "http" && scheme != "https") || part_of(u.get(), CURLUPART_HOST).empty()) return nullptr;
  return u;
}

}  // namespace

bool is_upstream_base(std::string_view url) { return parsed_base(url) != nullptr; }

Expected<std::string> upstream_url(std::string_view upstream, std::string_view target) {
  if (!target.starts_with('/')) return Error{"the request target must start with \"/\""};
  Url u = parsed_base(upstream);
  if (!u) return Error{"the upstream \"" + std::string(upstream) + "\" is not an http:// or https:// URL"};
  std::string base_path = part_of(u.get(), CURLUPART_PATH);
  while (!base_path.empty() && base_path.back() == '/') base_path.pop_back();
  const std::size_t q = target.find('?');
  const std::string path = base_path + std::string(target.substr(0, q));
  if (curl_url_set(u.get(), CURLUPART_PATH, path.c_str(), 0) != CURLUE_OK)
    return Error{"the request target's path cannot be put in a URL"};
  if (curl_url_set(u.get(), CURLUPART_QUERY, q == std::string_view::npos ? nullptr : std::string(target.substr(q + 1)).c_str(), 0) !=
      CURLUE_OK)
    return Error{"the request target's query cannot be put in a URL"};
  curl_url_set(u.get(), CURLUPART_FRAGMENT, nullptr, 0);
  std::string out = part_of(u.get(), CURLUPART_URL);
  if (out.empty()) return Error{"the request target cannot be put in a URL"};
  return out;
}

}  // namespace compactor::serve
