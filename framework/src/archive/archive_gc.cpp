#include "archive/archive_gc.hpp"

#include <signal.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <optional>
#include <string_view>

namespace compactor {
namespace {

namespace fs = std::filesystem;

bool all_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// ".tmp.<pid>.<n>" → pid
std::optional<pid_t> temp_owner(std::string_view rest) {
  constexpr std::string_view kTmp = ".tmp.";
  if (rest.substr(0, kTmp.size()) != kTmp) return std::nullopt;
  rest.remove_prefix(kTmp.size());
  std::size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, pid);
  if (ec != std::errc() || end != rest.data() + dot || pid <= 0) return std::nullopt;
  return pid;
}

}  // namespace

Expected<ArchiveGcResult> collect_archive_garbage(const std::string& archive, std::chrono::hours keep, bool dry_run) {
  const fs::path dir = archive;
  std::error_code ec;
  if (fs::is_symlink(dir, ec)) return Error{dir.string() + ": is a symbolic link; give the archive folder itself"};
  if (!fs::is_directory(dir, ec)) return Error{dir.string() + ": no such archive folder"};
  const auto cutoff = fs::file_time_type::clock::now() - keep;
  ArchiveGcResult r;
  auto remove_if_stale = [&](const fs::directory_entry& e, std::optional<pid_t> owner, bool state) {
    // A temporary whose process is gone is never renamed into place: removed whatever its age.
    const bool orphan = owner && ::kill(*owner, 0) != 0 && errno == ESRCH;
    if (orphan || e.last_write_time(ec) < cutoff) {
      if (dry_run) {
        r.would_remove.push_back(e.path().string());
        r.bytes += e.file_size(ec);
      }
      if (dry_run || fs::remove(e.path(), ec)) {
        ++r.removed;
        r.orphans += orphan;
        r.state += state;
      }
    } else {
      ++r.kept;
    }
  };
  // Files of one folder named <64 hex><suffix>, and their temporaries.
  auto sweep = [&](const fs::path& folder, std::string_view suffix, std::string_view prefix, bool state) {
    std::error_code inner;
    for (const auto& e : fs::directory_iterator(folder, inner)) {
      const std::string name = e.path().filename().string();
      if (e.is_symlink() || !e.is_regular_file() || name.size() < 64 + suffix.size() || !all_hex(name.substr(0, 64)) ||
          name.compare(0, prefix.size(), prefix) != 0 || name.compare(64, suffix.size(), suffix) != 0)
        continue;
      const bool whole = name.size() == 64 + suffix.size();
      std::optional<pid_t> owner = whole ? std::nullopt : temp_owner(std::string_view(name).substr(64 + suffix.size()));
      if (!whole && !owner) continue;
      remove_if_stale(e, owner, state);
    }
  };
  for (const auto& fan : fs::directory_iterator(dir, ec)) {
    const std::string name = fan.path().filename().string();
    if (fan.is_symlink() || !fan.is_directory()) continue;
    if (name == "pack") {
      // Packs (<64 hex>.pack, a run's blobs) go whole, by their age; pack.tmp.<pid>.<n> as above.
      std::error_code inner;
      for (const auto& e : fs::directory_iterator(fan.path(), inner)) {
        const std::string file = e.path().filename().string();
        if (e.is_symlink() || !e.is_regular_file()) continue;
        if (file.size() == 64 + 5 && file.ends_with(".pack") && all_hex(file.substr(0, 64))) remove_if_stale(e, std::nullopt, false);
        else if (file.starts_with("pack.tmp."))
          if (auto owner = temp_owner(std::string_view(file).substr(4))) remove_if_stale(e, owner, false);
      }
    } else if (name == kContinuityFolder) {
      sweep(fan.path(), ".json", "", true);
      sweep(fan.path(), ".lease", "", true);  // background summaries' leases (serve/background_summary.hpp)
    } else if (name.size() == 2 && all_hex(name)) {
      sweep(fan.path(), "", name, false);
    }
  }
  return r;
}

}  // namespace compactor
