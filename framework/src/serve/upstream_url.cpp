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

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The path as an upstream that decodes it once may see it: %XX decoded, a backslash read as a
// slash (some servers do).
std::string decoded_path(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (std::size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == '%' && i + 2 < path.size() && hex_digit(path[i + 1]) >= 0 && hex_digit(path[i + 2]) >= 0) {
      c = static_cast<char>(hex_digit(path[i + 1]) * 16 + hex_digit(path[i + 2]));
      i += 2;
    }
    out += c == '\\' ? '/' : c;
  }
  return out;
}

}  // namespace

std::optional<std::string> target_refusal(std::string_view target) {
  if (!target.starts_with('/')) return "the request target must be a path starting with \"/\" (origin form)";
  const std::string path = decoded_path(target.substr(0, target.find('?')));
  for (std::size_t at = 0; at < path.size();) {
    const std::size_t end = std::min(path.find('/', at), path.size());
    const std::string_view segment = std::string_view(path).substr(at, end - at);
    if (segment == "." || segment == "..")
      return "the request target's path has a dot segment (\".\" or \"..\", plain or encoded): it could leave the upstream's path";
    at = end + 1;
  }
  return std::nullopt;
}

bool is_upstream_base(std::string_view url) { return parsed_base(url) != nullptr; }

Expected<std::string> upstream_url(std::string_view upstream, std::string_view target) {
  if (auto why = target_refusal(target)) return Error{*why};
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
