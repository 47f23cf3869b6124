#include "serve/upstream_client.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <curl/curl.h>

#include <cctype>
#include <chrono>
#include <cstdlib>

namespace compactor::serve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool hop_by_hop(const std::string& name) {
  static const char* names[] = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
                                "upgrade", "host", "content-length", "expect", "accept-encoding", "proxy-authorization"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

struct Transfer {
  UpstreamAnswer answer;
  ClientConnection* client = nullptr;
  const Headers* extra = nullptr;
  Clock::time_point started;
  const std::function<bool(std::string_view)>* refused_in_stream = nullptr;
  std::string held;       // a 2xx body's start, until its first event is complete
  bool released = false;  // the first event was not a refusal: streaming as it arrives
  bool refused = false;   // it was: the rest is buffered
};

// Events end at a blank line ("\n\n", or "\r\n\r\n").
bool first_event_complete(const std::string& held) {
  return held.find("\n\n") != std::string::npos || held.find("\r\n\r\n") != std::string::npos;
}

// More than this before a blank line is no event stream worth holding.
constexpr std::size_t kHoldLimit = 1 << 20;

bool send_chunk(Transfer& t, const char* data, std::size_t len) {
  beast::error_code ec;
  asio::write(t.client->socket, http::make_chunk(asio::buffer(data, len)), ec);
  return !ec;
}

bool send_head(Transfer& t) {
  UpstreamAnswer& u = t.answer;
  http::response<http::empty_body> res{static_cast<http::status>(u.status), t.client->version};
  for (const auto& [k, v] : u.headers)
    if (!hop_by_hop(lower(k))) res.insert(k, v);
  for (const auto& [k, v] : *t.extra) res.set(k, v);
  res.keep_alive(t.client->keep_alive);
  res.chunked(true);
  http::response_serializer<http::empty_body> sr{res};
  beast::error_code ec;
  http::write_header(t.client->socket, sr, ec);
  u.head_sent = true;
  return !ec;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& u = static_cast<Transfer*>(user)->answer;
  std::string_view line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.rfind("HTTP/", 0) == 0) {  // a status line: a new response (after a 100, say)
    u.headers.clear();
    std::size_t sp = line.find(' ');
    u.status = sp == std::string_view::npos ? 0 : std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
  } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    u.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  return size * n;
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  auto& u = t.answer;
  std::size_t len = size * n;
  if (u.first_byte_us < 0)
    u.first_byte_us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t.started).count();
  u.body_bytes += len;
  if (u.status / 100 != 2 || t.refused) {
    u.buffered.append(data, len);
    return len;
  }
  if (t.refused_in_stream != nullptr && *t.refused_in_stream && !t.released) {
    t.held.append(data, len);
    if (!first_event_complete(t.held) && t.held.size() < kHoldLimit) return len;
    if ((*t.refused_in_stream)(t.held)) {
      t.refused = true;
      u.buffered = std::move(t.held);
      return len;
    }
    t.released = true;
    if (!send_head(t) || !send_chunk(t, t.held.data(), t.held.size())) {
      u.client_failed = true;
      return 0;
    }
    return len;
  }
  if (!u.head_sent && !send_head(t)) {
    u.client_failed = true;
    return 0;
  }
  if (len == 0) return 0;
  beast::error_code ec;
  asio::write(t.client->socket, http::make_chunk(asio::buffer(data, len)), ec);
  if (ec) {
    u.client_failed = true;
    return 0;  // the client is gone: stop reading from the upstream
  }
  return len;
}

}  // namespace

void init_upstream_client() { curl_global_init(CURL_GLOBAL_DEFAULT); }

UpstreamAnswer forward(ClientConnection& client, const ForwardRequest& request) {
  Transfer t;
  t.client = &client;
  t.extra = &request.extra;
  t.started = Clock::now();
  t.refused_in_stream = &request.refused_in_stream;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) {
    t.answer.curl_error = "cannot create an HTTP client";
    return t.answer;
  }
  curl_slist* list = nullptr;
  if (request.headers != nullptr)
    for (const auto& [k, v] : *request.headers)
      if (!hop_by_hop(lower(k))) list = curl_slist_append(list, (k + ": " + v).c_str());
  list = curl_slist_append(list, "Expect:");
  const std::string empty;
  const std::string& body = request.body != nullptr ? *request.body : empty;
  if (body.empty()) list = curl_slist_append(list, "Content-Type:");
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);  // a redirect would resend the key elsewhere
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_ms));
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  if (request.method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  CURLcode rc = curl_easy_perform(curl);
  UpstreamAnswer& u = t.answer;
  if (rc != CURLE_OK && !u.client_failed) u.curl_error = curl_easy_strerror(rc);
  // A stream that ended before its first event was complete goes out as it came; an empty 2xx
  // body still owes the client its response. A refused one is the caller's.
  if (rc == CURLE_OK && u.status / 100 == 2 && !u.head_sent && !t.refused &&
      (!send_head(t) || (!t.held.empty() && !send_chunk(t, t.held.data(), t.held.size()))))
    u.client_failed = true;
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return u;
}

void finish(ClientConnection& client, const UpstreamAnswer& u, const Headers& extra, int failure_status,
            const std::string& failure_body) {
  beast::error_code ec;
  if (u.head_sent) {
    if (u.client_failed || !u.curl_error.empty()) {
      client.broken = true;  // cut mid-stream: closing tells the client the body is incomplete
      return;
    }
    asio::write(client.socket, http::make_chunk_last(), ec);
    if (ec) client.broken = true;
    return;
  }
  if (u.client_failed) {
    client.broken = true;
    return;
  }
  if (u.failed()) {
    respond(client, failure_status, failure_body, "application/json", extra);
    return;
  }
  http::response<http::string_body> res{static_cast<http::status>(u.status), client.version};
  for (const auto& [k, v] : u.headers)
    if (!hop_by_hop(lower(k))) res.insert(k, v);
  for (const auto& [k, v] : extra) res.set(k, v);
  res.keep_alive(client.keep_alive);
  res.body() = u.buffered;
  res.prepare_payload();
  http::write(client.socket, res, ec);
  if (ec) client.broken = true;
}

}  // namespace compactor::serve
