#include "loader/plugin_discovery.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <dlfcn.h>
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

// The folder of the shared framework library this code is in: a test linking the test kit finds
// the stages of the tree or prefix it was built against, as the CLI of that tree does.
fs::path framework_library_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&default_plugin_dirs), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  fs::path library = fs::canonical(info.dli_fname, ec);
  return ec ? fs::path() : library.parent_path();
}

std::vector<std::string> default_plugin_dirs() {
  std::error_code ec;
  std::vector<fs::path> candidates;
  if (fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec) {
    fs::path prefix = exe.parent_path().parent_path();  // build/bin → build, PREFIX/bin → PREFIX
    candidates.insert(candidates.end(), {prefix / "plugins", prefix / "lib" / "compactor" / "plugins"});
  }
  // build/lib → build/plugins; PREFIX/lib → PREFIX/lib/compactor/plugins (or a multiarch libdir's parent's).
  if (fs::path lib = framework_library_dir(); !lib.empty())
    candidates.insert(candidates.end(), {lib.parent_path() / "plugins", lib / "compactor" / "plugins", lib.parent_path() / "compactor" / "plugins"});
  std::vector<std::string> dirs;
  for (const fs::path& candidate : candidates)
    if (fs::is_directory(candidate, ec) && std::find(dirs.begin(), dirs.end(), candidate.lexically_normal().string()) == dirs.end())
      dirs.push_back(candidate.lexically_normal().string());
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
