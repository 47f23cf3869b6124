// compactor restore RECEIPT [--archive DIR]; compactor archive gc --keep-days N [--archive DIR]
#include "command_line.hpp"
#include "commands.hpp"

#include "archive/archive_gc.hpp"
#include "archive/archive_store.hpp"
#include "host/exit_code.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>

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
links are not followed. The continuity state `serve` keeps in <DIR>/serve-state (a file per
compacted call) goes by the same age. A removed blob can no longer be restored: run it only for conversations you no longer
need to recover, and keep N above the age of any conversation still in use.
)";

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
  const std::string dir = args->get("archive").value_or(kDefaultArchive);
  auto r = collect_archive_garbage(dir, std::chrono::hours(24 * days));
  if (!r) {
    fmt::print(stderr, "compactor archive gc: {}\n", r.error().message);
    return kExitBadInput;
  }
  fmt::print("archive gc {}: removed {} file(s) older than {} day(s){}{}, kept {}\n", dir, r->removed, days,
             r->orphans ? fmt::format(" or left by a process that is gone ({})", r->orphans) : "",
             r->state ? fmt::format(" ({} of them continuity state)", r->state) : "", r->kept);
  return kExitOk;
}

}  // namespace compactor::cli
