// The `folder` store: one tenant's archive folder on this machine (archive.dir for the default
// tenant, archive.dir/tenants/<tenant> for another), exactly as before stores existed: packs and
// loose blobs (archive/archive_store.hpp) and the continuity state in <folder>/serve-state, a
// file per conversation prefix, `<64 hex>.json`.
//
// State is held to the archive's own rules: folders made 0700, files 0600, and a folder another
// user could write (archive/folder_trust.hpp) is neither read nor written: a history planted
// there would be forwarded as the user's own.
#pragma once

#include "store/store.hpp"

namespace compactor::store {

class FolderStore final : public Store {
 public:
  explicit FolderStore(std::string dir) : dir_(std::move(dir)) {}

  std::string where() const override { return "the archive folder " + dir_; }
  std::unique_ptr<RunArchive> open_run(FileSystem& fs) override;
  Expected<std::string> restore(std::string_view receipt) override;
  Expected<std::optional<StoredState>> longest_state(const std::vector<std::string>& keys, std::size_t count) override;
  Expected<bool> put_state(const std::string& key, std::string_view bytes, const std::string& supersedes = "") override;
  Expected<ArchiveGcResult> collect_garbage(std::chrono::hours keep) override;

  const std::string& dir() const { return dir_; }
  std::string state_dir() const;

 private:
  std::string dir_;
};

}  // namespace compactor::store
