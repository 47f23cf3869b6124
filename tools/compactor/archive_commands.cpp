// compactor restore RECEIPT [--archive DIR]; compactor archive gc --keep-days N [--archive DIR]
#include "command_line.hpp"
#include "commands.hpp"

#include "archive/archive_store.hpp"
#include "host/exit_code.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <signal.h>

namespace compactor::cli {

namespace {

constexpr const char* kDefaultArchive = ".compactor/archive";

constexpr const char* kRestoreHelp = R"(usage: compactor restore RECEIPT [--archive DIR]

Prints the exact bytes archived under RECEIPT (sha256:<64 hex digits>), after verifying that they
still hash to it: a tool_result's content as JSON, a message, or a JSONL snapshot of messages.
DIR defaults to .compactor/archive (the default `archive.dir`, relative to the working folder).
Exit 0, or 2 when the receipt is malformed, not in the archive, or the blob does not match it.
)";

constexpr const char* kArchiveHelp = R"(usage: compactor archive gc --keep-days N [--archive DIR]

Removes the blobs (and stale temporary files) of the archive whose last modification is more than
N days old (0 to 36500), and at once the temporary files of a run whose process is gone. A run's
blobs are one pack, removed whole by its age. Only the archive's own files are touched:
<2 hex>/<64 hex> blobs, pack/<64 hex>.pack packs and their .tmp.<pid>.<n> temporaries; symbolic
links are not followed. A removed blob can no longer be restored: run it only for conversations you no longer
need to recover, and keep N above the age of any conversation still in use.
)";

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

int restore_command(int argc, char** argv) {
  std::string error;
  auto args = parse_args(argc, argv, 2, {{"archive"}}, error);
  if (args && args->help) {
    fmt::print("{}", kRestoreHelp);
    return kExitOk;
  }
  if (args && args->positional.size() != 1) error = args->positional.empty() ? "a RECEIPT is required" : "only one RECEIPT";
  if (!args || !error.empty()) {
    fmt::print(stderr, "compactor restore: {}\n{}", error, kRestoreHelp);
    return kExitBadInput;
  }
  auto bytes = restore_blob(args->get("archive").value_or(kDefaultArchive), args->positional.front());
  if (!bytes) {
    fmt::print(stderr, "compactor restore: {}\n", bytes.error().message);
    return kExitBadInput;
  }
  std::fwrite(bytes->data(), 1, bytes->size(), stdout);
  return kExitOk;
}

int archive_command(int argc, char** argv) {
  if (argc >= 3 && (std::string_view(argv[2]) == "--help" || std::string_view(argv[2]) == "-h")) {
    fmt::print("{}", kArchiveHelp);
    return kExitOk;
  }
  if (argc < 3 || std::string_view(argv[2]) != "gc") {
    fmt::print(stderr, "compactor archive: expected the subcommand gc\n{}", kArchiveHelp);
    return kExitBadInput;
  }
  std::string error;
  auto args = parse_args(argc, argv, 3, {{"archive"}, {"keep-days"}}, error);
  if (args && args->help) {
    fmt::print("{}", kArchiveHelp);
    return kExitOk;
  }
  // Whole days, bounded so that the cut-off cannot overflow (60,000 days wrapped to "all").
  constexpr long kMaxDays = 36500;
  long days = -1;
  if (args && args->get("keep-days")) {
    std::string text = *args->get("keep-days");
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), days);
    if (ec != std::errc() || end != text.data() + text.size() || days > kMaxDays) days = -1;
  }
  if (args && days < 0) error = "--keep-days takes a whole number of days from 0 to " + std::to_string(kMaxDays);
  if (!args || !error.empty()) {
    fmt::print(stderr, "compactor archive gc: {}\n{}", error, kArchiveHelp);
    return kExitBadInput;
  }
  namespace fs = std::filesystem;
  fs::path dir = args->get("archive").value_or(kDefaultArchive);
  std::error_code ec;
  if (fs::is_symlink(dir, ec)) {
    fmt::print(stderr, "compactor archive gc: {}: is a symbolic link; give the archive folder itself\n", dir.string());
    return kExitBadInput;
  }
  if (!fs::is_directory(dir, ec)) {
    fmt::print(stderr, "compactor archive gc: {}: no such archive folder\n", dir.string());
    return kExitBadInput;
  }
  auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(24 * days);
  std::size_t removed = 0, kept = 0, dead = 0;
  // Only what the archive writes is touched: <dir>/<2 hex>/<64 hex> blobs and their temporaries
  // <64 hex>.tmp.<pid>.<n>, <dir>/pack/<64 hex>.pack packs and their pack.tmp.<pid>.<n>; symbolic
  // links are never followed, other files never removed.
  auto remove_if_stale = [&](const fs::directory_entry& e, std::optional<pid_t> owner) {
    // A temporary whose process is gone is never renamed into place: removed whatever its age.
    bool orphan = owner && ::kill(*owner, 0) != 0 && errno == ESRCH;
    if (orphan || e.last_write_time() < cutoff) {
      if (fs::remove(e.path(), ec)) ++removed, dead += orphan;
    } else {
      ++kept;
    }
  };
  for (const auto& fan : fs::directory_iterator(dir, ec)) {
    std::string prefix = fan.path().filename().string();
    if (prefix == "pack" && !fan.is_symlink() && fan.is_directory()) {
      // Packs (<64 hex>.pack, a run's blobs) go whole, by their age; pack.tmp.<pid>.<n> as above.
      std::error_code inner;
      for (const auto& e : fs::directory_iterator(fan.path(), inner)) {
        std::string name = e.path().filename().string();
        if (e.is_symlink() || !e.is_regular_file()) continue;
        if (name.size() == 64 + 5 && name.ends_with(".pack") && all_hex(name.substr(0, 64))) remove_if_stale(e, std::nullopt);
        else if (name.starts_with("pack.tmp.")) {
          if (auto owner = temp_owner(name.substr(4))) remove_if_stale(e, owner);
        }
      }
      continue;
    }
    if (fan.is_symlink() || !fan.is_directory() || prefix.size() != 2 || !all_hex(prefix)) continue;
    std::error_code inner;
    for (const auto& e : fs::directory_iterator(fan.path(), inner)) {
      std::string name = e.path().filename().string();
      if (e.is_symlink() || !e.is_regular_file() || name.size() < 64 || !all_hex(name.substr(0, 64)) ||
          name.compare(0, 2, prefix) != 0)
        continue;
      bool blob = name.size() == 64;
      std::optional<pid_t> owner = blob ? std::nullopt : temp_owner(name.substr(64));
      if (!blob && !owner) continue;
      remove_if_stale(e, owner);
    }
  }
  fmt::print("archive gc {}: removed {} file(s) older than {} day(s){}, kept {}\n", dir.string(), removed, days,
             dead ? fmt::format(" or left by a process that is gone ({})", dead) : "", kept);
  return kExitOk;
}

}  // namespace compactor::cli
