#include "loader/plugin_discovery.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <unistd.h>

namespace compactor {

namespace fs = std::filesystem;

std::string stage_file_name(const std::string& stage) { return "compactor_stage_" + stage + ".so"; }
std::string summarizer_file_name(const std::string& kind) { return "compactor_summarizer_" + kind + ".so"; }
std::string checker_file_name(const std::string& name) { return "compactor_checker_" + name + ".so"; }

std::vector<std::string> env_plugin_dirs() {
  std::vector<std::string> dirs;
  const char* path = std::getenv("COMPACTOR_PLUGIN_PATH");
  if (path == nullptr) return dirs;
  std::string_view rest = path;
  while (!rest.empty()) {
    std::size_t colon = rest.find(':');
    std::string_view dir = rest.substr(0, colon);
    if (!dir.empty()) dirs.emplace_back(dir);
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return dirs;
}

std::vector<std::string> default_plugin_dirs() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  fs::path bin = exe.parent_path();
  std::vector<std::string> dirs;
  for (fs::path candidate : {bin.parent_path() / "plugins", bin.parent_path() / "lib" / "compactor" / "plugins"})
    if (fs::is_directory(candidate, ec)) dirs.push_back(candidate.string());
  return dirs;
}

std::optional<std::string> find_plugin_file(const std::string& file_name, const std::vector<std::string>& dirs) {
  std::error_code ec;
  for (const auto& dir : dirs) {
    fs::path p = fs::path(dir) / file_name;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return std::nullopt;
}

std::optional<std::string> find_stage_file(const std::string& stage, const std::vector<std::string>& dirs) {
  return find_plugin_file(stage_file_name(stage), dirs);
}

std::vector<std::string> list_stage_files(const std::vector<std::string>& dirs) {
  return list_plugin_files(dirs, "compactor_stage_");
}

std::vector<std::string> list_plugin_files(const std::vector<std::string>& dirs, const std::string& prefix) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::error_code ec;
  for (const auto& dir : dirs) {
    std::vector<std::string> here;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) == 0 && e.path().extension() == ".so" && seen.insert(name).second)
        here.push_back(e.path().string());
    }
    std::sort(here.begin(), here.end());
    out.insert(out.end(), here.begin(), here.end());
  }
  return out;
}

}  // namespace compactor
