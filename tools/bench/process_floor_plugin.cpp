// The plugin compactor_bench_process_floor loads six copies of: a C++ library that uses the
// standard library, as a stage does, and nothing of Compactor's.
#include <map>
#include <string>
#include <vector>

extern "C" __attribute__((visibility("default"))) int floor_plugin_entry(int n) {
  std::vector<std::string> names(static_cast<std::size_t>(n), "stage");
  std::map<std::string, int> seen;
  for (const auto& name : names) ++seen[name];
  return static_cast<int>(seen.size());
}
