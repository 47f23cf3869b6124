#include "bench/results.hpp"

#include <algorithm>
#include <tuple>

namespace compactor::bench {

void BenchResults::sort() {
  std::sort(replays.begin(), replays.end(), [](const SessionReplay& a, const SessionReplay& b) {
    return std::tie(a.session, a.config_index) < std::tie(b.session, b.config_index);
  });
  std::sort(skipped.begin(), skipped.end(),
            [](const Skipped& a, const Skipped& b) { return std::tie(a.session, a.reason) < std::tie(b.session, b.reason); });
}

std::vector<std::string> notices(const BenchResults& results) {
  std::vector<std::string> lines;
  for (const auto& s : results.skipped) lines.push_back("skipped " + s.session + ": " + s.reason);
  for (const auto& r : results.replays) {
    for (const auto& e : r.errors) lines.push_back(r.session + " (" + r.config + "): " + e);
    for (const Retention* ret : {&r.median, &r.last})
      for (const auto& p : ret->lost)
        lines.push_back(r.session + " (" + r.config + "): call " + std::to_string(ret->call) + ": lost probe \"" + p.substr(0, 120) + "\"");
  }
  return lines;
}

bool passed(const BenchResults& results) {
  for (const auto& r : results.replays)
    if (r.failures || r.rejections || !r.median.lost.empty() || !r.last.lost.empty()) return false;
  return true;
}

}  // namespace compactor::bench
