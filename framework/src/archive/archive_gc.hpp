// Removing what an archive folder no longer needs (`compactor archive gc`): blobs, packs and
// continuity state older than an age limit, and the temporary files of processes that are gone.
// Only names the archive and `serve` write are touched, and symbolic links are never followed.
#pragma once

#include "compactor/error.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace compactor {

// The folder of an archive where `serve` keeps each conversation's continuity state.
inline constexpr const char* kContinuityFolder = "serve-state";

struct ArchiveGcResult {
  std::size_t removed = 0;  // blobs, packs and state files, by their age or their gone writer
  std::size_t orphans = 0;  // of them, temporaries of a process that is gone (whatever their age)
  std::size_t state = 0;    // of them, continuity state files
  std::size_t kept = 0;
  // A dry run's: what would be removed (paths, or receipts in a store beyond the folder), and
  // its bytes; nothing is removed.
  std::vector<std::string> would_remove;
  std::uint64_t bytes = 0;
};

// Removes, from the archive folder `dir`, what was last modified more than `keep` ago:
// <2 hex>/<64 hex> blobs, pack/<64 hex>.pack packs, serve-state/<64 hex>.json state files; and
// every .tmp.<pid>.<n> temporary of those whose process is gone. An error when `dir` is a
// symbolic link or not a folder.
// `dry_run`: nothing is removed; what would be is counted and listed.
Expected<ArchiveGcResult> collect_archive_garbage(const std::string& dir, std::chrono::hours keep, bool dry_run = false);

}  // namespace compactor
