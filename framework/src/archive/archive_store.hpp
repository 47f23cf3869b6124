// The archive that makes every removal recoverable. A stage that removes or shortens content
// first puts the exact bytes here and gets a receipt, `sha256:<hex>`, which its marker names.
// Blobs are content-addressed (names come only from hashes, never from ids): a blob already there
// with the same hash is success, so two processes can share a folder.
//
// A store writes one pack per run: put() appends each blob to one file created exclusively under a
// temporary name (<dir>/pack/pack.tmp.<pid>.<n>, mode 0600, folders 0700); commit(), which the
// host calls before it writes its output, appends the pack's index (receipt, offset, length of
// every blob kept), syncs it, renames the pack into place under the hash of its
// index (<dir>/pack/<hex>.pack) and syncs once more: one file and two syncs per run, however many
// blobs (the pack, then its folder and those above folders it made, with fsync; the whole file
// system, syncfs, when it wrote a loose blob). Blobs of a stage taken back stay in the file as unindexed bytes. rollback() removes the
// temporary of a run that will write nothing. restore_blob() reads a loose blob (<dir>/<xx>/<hex>,
// the layout before packs, still written to replace a wrong file at a blob's name) or finds the
// receipt in a pack's index. The manifest of this run (receipt → where the blob is) lets the
// `archived` checker verify a candidate: find() reads a packed blob back from the pack (the page
// cache, not the disk), so the run holds no blob in memory after its put() returns.
#pragma once

#include <sys/types.h>

#include "compactor/archive.hpp"
#include "compactor/error.hpp"
#include "archive/file_system.hpp"
#include "archive/run_archive.hpp"

#include <cstdint>
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

class ArchiveStore final : public RunArchive {
 public:
  explicit ArchiveStore(std::string dir, FileSystem& fs = real_file_system());
  ~ArchiveStore();  // rolls back what was neither committed nor rolled back

  ArchiveStore(const ArchiveStore&) = delete;
  ArchiveStore& operator=(const ArchiveStore&) = delete;

  Expected<std::string> put(std::string_view bytes) override;
  Expected<std::string> put(std::string&& bytes) override;
  Expected<std::string> put(HashedBlob&& blob) override;
  Expected<std::string> put(const char* bytes) { return put(std::string_view(bytes)); }
  // A packed blob is read back and kept until the next put(), revert_to() or commit(): what one
  // stage's checks need, not every blob of the run.
  const std::string* find(std::string_view receipt) const override;
  bool holds(std::string_view receipt, std::uint64_t offset, std::string_view bytes) const override;
  std::optional<std::uint64_t> size_of(std::string_view receipt) const override;

  // Makes every blob of this run durable and visible (see above).
  Expected<bool> commit() override;
  // The bytes commit() will add to the folder: this run's pack (taken-back blobs included) with
  // its index, and its loose blobs (what a bounded store charges before committing).
  std::uint64_t commit_size() const;
  void rollback() override;

  // What a stage wrote can be taken back when its candidate is not committed: mark() before the
  // stage runs, revert_to(mark) when it declines or is rejected.
  Mark mark() const override { return {pending_.size(), added_.size()}; }
  void revert_to(Mark mark) override;

  // The receipts this run keeps (put and not taken back), in the order they came, and the bytes
  // of one, read back from the pack and not kept (a spool shipping them elsewhere reads each once).
  const std::vector<std::string>& receipts() const { return added_; }
  std::optional<std::string> bytes_of(std::string_view receipt) const;
  std::vector<std::string> receipts_since(Mark mark) const override {
    return {added_.begin() + static_cast<std::ptrdiff_t>(std::min(mark.receipts, added_.size())), added_.end()};
  }

  const std::string& dir() const { return dir_; }
  // Where a receipt's loose blob lives: <dir>/<first two hex digits>/<hex>.
  std::string path_of(std::string_view receipt) const;

 private:
  struct Pending {  // a loose blob (replacing a wrong file at its name), renamed at commit
    std::string temp;
    std::string final;
  };
  struct Packed {  // a blob in this run's pack
    std::string receipt;
    std::uint64_t offset = 0, length = 0;
  };
  struct Stored {  // a blob of this run: its place in the pack, or its bytes when loose (rare)
    bool packed = false;
    std::uint64_t offset = 0, length = 0;
    std::string bytes;
  };
  Expected<bool> ensure_folder(const std::string& path);
  // The archive folder (and those above it), made and checked once per store rather than on
  // every put; the pack folder and each fan-out folder likewise, as first used.
  Expected<bool> ensure_archive_folder();
  // The bytes of a packed blob, read back from this run's pack (or, once committed, its file).
  std::optional<std::string> read_back(std::string_view receipt, const Stored& stored) const;
  // Exactly `size` bytes of this run's open pack from `offset`, retrying EINTR and short reads.
  bool read_pack_at(char* data, std::size_t size, std::uint64_t offset) const;
  Expected<bool> write_loose(const std::string& final_path, std::string_view bytes);
  // Every byte, retrying EINTR; `written` (when given) counts what reached the file, even on failure.
  Expected<bool> write_all(int fd, std::string_view bytes, const std::string& path, std::uint64_t* written = nullptr);
  // A folder went away during the run: make each again when next needed.
  void forget_folders();
  // The pieces, one after the other, as one blob of this run's pack.
  Expected<bool> append_to_pack(const std::string& receipt, const std::vector<std::string_view>& pieces);
  Expected<bool> commit_pack();
  void drop_pack();
  Expected<bool> check_folder_owner();

  std::string dir_;
  FileSystem& fs_;
  std::map<std::string, Stored, std::less<>> manifest_;       // receipt → where
  mutable std::map<std::string, std::string, std::less<>> read_back_;  // what find() read from the pack
  std::vector<std::string> added_;                             // receipts in the order they came
  std::vector<Pending> pending_;
  std::vector<Packed> packed_;  // indexed blobs of the pack, in the order they came
  std::string pack_temp_;       // the pack's temporary name, once opened
  int pack_fd_ = -1;
  std::uint64_t pack_size_ = 0;  // bytes written to the pack (unindexed ones included)
  bool folder_checked_ = false;
  bool folders_made_ = false;
  bool pack_folder_made_ = false;
  std::vector<std::string> made_folders_;  // folders this store created: their names must reach the disk too
  std::vector<bool> fans_made_ = std::vector<bool>(256);
};

// Reads a blob back, verifying its hash: the original bytes, or an error saying what is wrong
// (malformed receipt, no such blob, hash mismatch) and where.
Expected<std::string> restore_blob(const std::string& dir, std::string_view receipt);

// Removes the temporary blobs and packs (<dir>/<xx>/<hex>.tmp.<pid>.<n>,
// <dir>/pack/pack.tmp.<pid>.<n>) a process that is gone left behind, and nothing else; `compactor run` calls it when its pipeline child died.
void remove_temp_blobs_of(const std::string& dir, pid_t pid);

}  // namespace compactor
