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
  // `dir`: the namespace's folder; `root` and `tenant`: the archive folder and the tenant it is
  // for: an API key's tenant no upstream has vouched for is in the unverified area of `root`
  // instead (store/folder_bounds.hpp).
  explicit FolderStore(std::string dir, std::string root = "", std::string tenant = "")
      : dir_(std::move(dir)), root_(std::move(root)), tenant_(std::move(tenant)) {}

  std::string where() const override { return "the archive folder " + dir_; }
  std::unique_ptr<RunArchive> open_run(FileSystem& fs) override;
  Expected<std::string> restore(std::string_view receipt) override;
  Expected<std::optional<StoredState>> longest_state(const std::vector<std::string>& keys, std::size_t count) override;
  Expected<bool> put_state(const std::string& key, std::string_view bytes, const std::string& supersedes = "") override;
  Expected<ArchiveGcResult> collect_garbage(std::chrono::hours keep, bool dry_run = false) override;
  Expected<bool> take_lease(const std::string& key, std::int64_t ttl_ms) override;
  void release_lease(const std::string& key) override;
  Expected<bool> unverified() override;

  const std::string& dir() const { return dir_; }
  std::string state_dir() const;

  // Charges `bytes` (negative: a state file replaced by a smaller one) to the namespace's bounds
  // before `what` ("archive", "continuity state") writes them; an error when a bound refuses them
  // (counted) or the bookkeeping fails (counted as `what`'s failure).
  Expected<bool> admit(std::int64_t bytes, const std::string& what);

 private:
  void settle();

  std::string dir_, root_, tenant_;
  bool settled_ = false, unverified_ = false;
  // The state longest_state() found (its key and bytes): a put of the same bytes under the same
  // key (a call sent again) only marks it as sent now.
  std::string read_key_, read_bytes_;
};

}  // namespace compactor::store
