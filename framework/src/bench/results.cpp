#include "bench/results.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <tuple>

namespace compactor::bench {

void BenchResults::sort() {
  std::sort(replays.begin(), replays.end(), [](const SessionReplay& a, const SessionReplay& b) {
    return std::tie(a.session, a.config_index) < std::tie(b.session, b.config_index);
  });
  std::sort(skipped.begin(), skipped.end(),
            [](const Skipped& a, const Skipped& b) { return std::tie(a.session, a.reason) < std::tie(b.session, b.reason); });
}

std::string BenchResults::config_name(std::uint64_t index) const {
  if (index >= configs.size()) return kUncompacted;
  return configs[index].name.empty() ? configs[index].path : configs[index].name;
}

std::string BenchResults::config_path(std::uint64_t index) const {
  return index < configs.size() ? configs[index].path : std::string(kUncompacted);
}

std::vector<std::string> config_names(const std::vector<std::string>& paths, const std::vector<std::string>& given) {
  auto named = [&](std::size_t i) { return i < given.size() && !given[i].empty(); };
  // A sweep's point ("s #3: micro.keep_recent=5") by its number, a file by its stem.
  auto stem = [](const std::string& path) {
    if (const std::size_t hash = path.find(" #"); hash != std::string::npos) return path.substr(0, path.find(':', hash));
    const std::string s = std::filesystem::path(path).stem().string();
    return s.empty() ? path : s;
  };
  auto folder_and_stem = [&](const std::string& path) {
    const std::string folder = std::filesystem::path(path).parent_path().filename().string();
    return folder.empty() || path.find(" #") != std::string::npos ? stem(path) : folder + "/" + stem(path);
  };
  std::vector<std::string> names(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) names[i] = named(i) ? given[i] : stem(paths[i]);
  // A name two configs share is made longer, unless the user gave it.
  for (auto longer : {std::function<std::string(const std::string&)>(folder_and_stem), std::function<std::string(const std::string&)>(
                                                                                          [](const std::string& p) { return p; })}) {
    std::map<std::string, std::size_t> count;
    for (const auto& n : names) ++count[n];
    for (std::size_t i = 0; i < paths.size(); ++i)
      if (!named(i) && (count[names[i]] > 1 || names[i] == kUncompacted)) names[i] = longer(paths[i]);
  }
  return names;
}

std::vector<Dearer> dearer_sessions(const BenchResults& results) {
  std::vector<Dearer> out;
  std::map<std::string, const SessionReplay*> baseline;
  for (const auto& r : results.replays)
    if (results.is_baseline(r)) baseline[r.session] = &r;
  for (const auto& r : results.replays) {
    auto b = baseline.find(r.session);
    if (results.is_baseline(r) || b == baseline.end() || r.cost_with_refetch_nusd() <= b->second->cost_with_refetch_nusd()) continue;
    out.push_back({r.session, results.config_name(r.config_index), r.cost_with_refetch_nusd(), b->second->cost_with_refetch_nusd(), r.evidence.refetch_nusd,
                   b->second->over_window == 0 && b->second->refusals == 0});
  }
  return out;
}

std::vector<std::string> meter_warnings(const BenchResults& results) {
  std::vector<std::string> lines;
  std::map<std::string, std::set<std::string>> by_session;
  for (const auto& r : results.replays) by_session[r.session].insert(r.meter);
  for (const auto& [session, meters] : by_session) {
    if (meters.size() < 2) continue;
    std::string list;
    for (const auto& m : meters) list += (list.empty() ? "" : ", ") + m;
    lines.push_back("warning: " + session + " is priced with different meters (" + list + "): its rows' costs do not compare");
  }
  return lines;
}

std::vector<std::string> notices(const BenchResults& results) {
  std::vector<std::string> lines;
  for (const auto& s : results.skipped) lines.push_back("skipped " + s.session + ": " + s.reason);
  for (const auto& r : results.replays) {
    const std::string config = results.config_name(r.config_index);
    for (const auto& e : r.errors) lines.push_back(r.session + " (" + config + "): " + e);
    for (const Retention* ret : {&r.median, &r.last})
      for (const auto& p : ret->lost)
        lines.push_back(r.session + " (" + config + "): call " + std::to_string(ret->call) + ": lost probe \"" + p.substr(0, 120) + "\"");
  }
  for (auto& w : meter_warnings(results)) lines.push_back(std::move(w));
  return lines;
}

bool passed(const BenchResults& results) {
  for (const auto& r : results.replays)
    if (r.failures || r.rejections || !r.median.lost.empty() || !r.last.lost.empty()) return false;
  return true;
}

}  // namespace compactor::bench
