#include "serve/serve_metrics.hpp"

#include "serve/tenant.hpp"

#include <fmt/core.h>

#include <array>
#include <cstdlib>

namespace compactor::serve {

namespace {
// Seconds: from 100 µs (a cached continuation's stages) to 60 s (a model summary).
constexpr std::array<double, 14> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                             0.025,  0.05,    0.1,    0.25,  0.5,    1,     60};

std::string number(double v) {
  if (v == static_cast<double>(static_cast<long long>(v))) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);
}
}  // namespace

std::string label_value(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void Metrics::add(const std::string& name, const std::string& labels, double value) {
  std::lock_guard lock(mutex_);
  counters_[name][labels] += value;
}

void Metrics::set(const std::string& name, const std::string& labels, double value) {
  std::lock_guard lock(mutex_);
  counters_[name][labels] = value;
}

void Metrics::set_only(const std::string& name, const std::string& labels, double value) {
  std::lock_guard lock(mutex_);
  auto& series = counters_[name];
  series.clear();
  series[labels] = value;
}

void Metrics::raise_to(const std::string& name, const std::string& labels, double value) {
  std::lock_guard lock(mutex_);
  double& v = counters_[name][labels];
  if (value > v) v = value;
}

void Metrics::observe(const std::string& name, const std::string& labels, double seconds) {
  std::lock_guard lock(mutex_);
  Histogram& h = histograms_[name][labels];
  if (h.buckets.empty()) h.buckets.assign(kBuckets.size(), 0);
  for (std::size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) {
      ++h.buckets[i];
      break;
    }
  h.sum += seconds;
  ++h.count;
}

void Metrics::describe(const std::string& name, const std::string& type, const std::string& help) {
  std::lock_guard lock(mutex_);
  meta_[name] = {type, help};
}

std::string Metrics::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  auto header = [&](const std::string& name, const char* fallback) {
    auto it = meta_.find(name);
    if (it != meta_.end()) out += "# HELP " + name + " " + it->second.second + "\n";
    out += "# TYPE " + name + " " + (it != meta_.end() ? it->second.first : std::string(fallback)) + "\n";
  };
  for (const auto& [name, series] : counters_) {
    header(name, "counter");
    for (const auto& [labels, value] : series)
      out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + number(value) + "\n";
  }
  for (const auto& [name, series] : histograms_) {
    header(name, "histogram");
    for (const auto& [labels, h] : series) {
      std::string sep = labels.empty() ? "" : ",";
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < kBuckets.size(); ++i) {
        cumulative += h.buckets[i];
        out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, number(kBuckets[i]), cumulative);
      }
      out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, h.count);
      std::string braces = labels.empty() ? "" : "{" + labels + "}";
      out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", name, braces, h.sum, name, braces, h.count);
    }
  }
  return out;
}

std::optional<Reply> scrape_refusal(const ServeConfig& serve, bool loopback_listener, const boost::beast::http::fields& headers,
                                    std::string_view route) {
  auto refuse = [route](int status, const std::string& why) {
    Headers extra;
    if (status == 401) extra.emplace_back("www-authenticate", "Bearer");
    return Reply{status, "compactor serve: " + std::string(route) + " " + why + "\n", "text/plain", std::move(extra)};
  };
  if (!serve.metrics_token_env.empty()) {
    const char* token = std::getenv(serve.metrics_token_env.c_str());
    if (token == nullptr || *token == '\0')
      return refuse(403, "is closed: serve.metrics_token_env names " + serve.metrics_token_env + ", which is not set in serve's environment");
    if (!same_secret(bearer_token(headers), token))
      return refuse(401, "needs Authorization: Bearer <the token of serve.metrics_token_env>");
    return std::nullopt;
  }
  const std::string_view proxy = serve.fronted ? std::string_view("serve.fronted") : proxy_header(headers);
  if (!loopback_listener || !proxy.empty())
    return refuse(403, fmt::format("names every client and answers a remote scraper ({}) only with a token: set "
                                   "serve.metrics_token_env",
                                   proxy.empty() ? "a listener beyond loopback" : proxy));
  return std::nullopt;
}

}  // namespace compactor::serve
