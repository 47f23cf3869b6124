// One HTTP POST through libcurl, with connect and total time limits. No retries here: the backend
// decides what to retry. Nothing of the request's headers (which carry the API key) is ever
// copied into an error, a log line or the result.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace compactor::http {

struct Response {
  long status = 0;                                 // 0 when no response arrived
  std::string body;
  std::optional<std::chrono::milliseconds> retry_after;  // from a Retry-After header in seconds
  std::string transport_error;                     // set when no complete response arrived
  bool timed_out = false;
  bool connect_failed = false;                     // refused, unreachable, name not resolved
};

struct Request {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds total_timeout{60000};
};

Response post(const Request& request);

}  // namespace compactor::http
