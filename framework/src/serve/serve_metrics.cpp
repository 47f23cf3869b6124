#include "serve/serve_metrics.hpp"

#include <fmt/core.h>

#include <array>

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

}  // namespace compactor::serve
