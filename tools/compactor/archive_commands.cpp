// compactor restore RECEIPT [--archive DIR]; compactor archive gc --keep-days N [--archive DIR]
#include "command_line.hpp"
#include "commands.hpp"

#include "compactor/archive_store.hpp"
#include "compactor/exit_code.hpp"

#include <fmt/core.h>

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
N days old. A removed blob can no longer be restored: run it only for conversations you no longer
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
  long days = -1;
  if (args && args->get("keep-days")) {
    try {
      std::size_t used = 0;
      days = std::stol(*args->get("keep-days"), &used);
      if (used != args->get("keep-days")->size()) days = -1;
    } catch (const std::exception&) {
      days = -1;
    }
  }
  if (args && days < 0) error = "--keep-days takes a whole number of days ≥ 0";
  if (!args || !error.empty()) {
    fmt::print(stderr, "compactor archive gc: {}\n{}", error, kArchiveHelp);
    return kExitBadInput;
  }
  namespace fs = std::filesystem;
  fs::path dir = args->get("archive").value_or(kDefaultArchive);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    fmt::print(stderr, "compactor archive gc: {}: no such archive folder\n", dir.string());
    return kExitBadInput;
  }
  auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(24 * days);
  std::size_t removed = 0, kept = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    if (e.last_write_time() < cutoff) {
      if (fs::remove(e.path(), ec)) ++removed;
    } else {
      ++kept;
    }
  }
  fmt::print("archive gc {}: removed {} file(s) older than {} day(s), kept {}\n", dir.string(), removed, days, kept);
  return kExitOk;
}

}  // namespace compactor::cli
