// Forwarding one request to the upstream through libcurl (TLS, timeouts; redirects refused, since
// one would resend the key elsewhere). A 2xx response passes to the client chunk by chunk as it
// arrives (server-sent events stay live); any other status is buffered (errors are small) so
// that a context-length refusal can be retried before the client sees anything. An API that may
// refuse the context in the first event of a 2xx stream has that event held: the head goes out
// with it once it is not a refusal, and a refusal is buffered whole like an error.
#pragma once

#include "serve/client_connection.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace compactor::serve {

struct UpstreamAnswer {
  int status = 0;
  Headers headers;
  std::string buffered;    // the body of a non-2xx response
  bool head_sent = false;  // the response head went to the client (the body is streaming)
  bool client_failed = false;
  std::string curl_error;
  std::uint64_t body_bytes = 0;
  std::int64_t first_byte_us = -1;  // from the forward's start to the upstream's first body byte

  bool failed() const { return !curl_error.empty() || status == 0; }
};

struct ForwardRequest {
  std::string url;
  std::string method = "POST";
  const Headers* headers = nullptr;  // the client's (hop-by-hop ones are not forwarded)
  const std::string* body = nullptr;
  std::int64_t timeout_ms = 600000;
  Headers extra;  // the server's own headers on the response (x-compactor-status, …)
  // When set, a 2xx stream's first event (up to its blank line) is held and given to this; true
  // means a refusal: the response is then buffered whole and not sent (the caller retries or
  // finishes it).
  std::function<bool(std::string_view first_event)> refused_in_stream;
};

UpstreamAnswer forward(ClientConnection& client, const ForwardRequest& request);

// Ends a streamed response, or writes a buffered one. An upstream that failed before answering
// gets `failure_body` with `failure_status` (the wire format's error shape).
void finish(ClientConnection& client, const UpstreamAnswer& answer, const Headers& extra, int failure_status,
            const std::string& failure_body);

// Called once before any forward, from the process's main thread.
void init_upstream_client();

}  // namespace compactor::serve
