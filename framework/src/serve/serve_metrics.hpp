// The server's counters and histograms in the Prometheus text exposition format (version 0.0.4).
// Written directly: prometheus-cpp is not packaged in Debian 12, and the server needs only
// counters and fixed-bucket histograms behind one mutex.
#pragma once

#include "serve/reply.hpp"

#include "host/serve_config.hpp"

#include <boost/beast/http/fields.hpp>

#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <vector>

namespace compactor::serve {

class Metrics {
 public:
  // `labels` is the inside of the braces, e.g. `route="messages",outcome="compacted"` (may be empty).
  void add(const std::string& name, const std::string& labels, double value = 1);
  // A gauge's value now.
  void set(const std::string& name, const std::string& labels, double value);
  // A gauge with this one series: any other of `name` is removed (an info metric, such as the
  // config in use, whose labels change).
  void set_only(const std::string& name, const std::string& labels, double value);
  // A gauge that keeps the largest value it was given (a peak).
  void raise_to(const std::string& name, const std::string& labels, double value);
  void observe(const std::string& name, const std::string& labels, double seconds);
  void describe(const std::string& name, const std::string& type, const std::string& help);
  std::string render() const;

 private:
  struct Histogram {
    std::vector<std::uint64_t> buckets;  // cumulative at render time; counts per bucket here
    double sum = 0;
    std::uint64_t count = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, std::pair<std::string, std::string>> meta_;  // name → type, help
  std::map<std::string, std::map<std::string, double>> counters_;
  std::map<std::string, std::map<std::string, Histogram>> histograms_;
};

// A label value escaped for the text format.
std::string label_value(const std::string& value);

// Why a scrape of /metrics (which names every client and key hash) is refused, or nothing: with
// serve.metrics_token_env, a request without its value as a bearer token (401; 403 when the
// variable is not set); without it, a request that is not local (a listener beyond loopback,
// serve.fronted, or a proxy's forwarding header: 403, saying what to set).
// `route`: what the refusal names (/metrics, or /dashboard, which takes the same credentials).
std::optional<Reply> scrape_refusal(const ServeConfig& serve, bool loopback_listener, const boost::beast::http::fields& headers,
                                    std::string_view route = "/metrics");

}  // namespace compactor::serve
