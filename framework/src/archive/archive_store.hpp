// The archive that makes every removal recoverable. A stage that removes or shortens content
// first puts the exact bytes here and gets a receipt, `sha256:<hex>`, which its marker names.
// Blobs are content-addressed (names come only from hashes, never from ids): a blob already there
// with the same hash is success, so two processes can share a folder.
//
// Writes are batched for durability: put() creates each blob exclusively under a temporary name
// (mode 0600, folders 0700) and writes it; commit(), which the host calls before it writes its
// output, syncs the file system once (every blob's data), renames each blob into place, and syncs
// once more (the renames): two syncs per run, however many blobs. rollback() removes the
// temporaries of a run that will write nothing. The manifest of
// this run (receipt → bytes) lets the `archived` checker verify a candidate without reading disk.
#pragma once

#include <sys/types.h>

#include "compactor/archive.hpp"
#include "compactor/error.hpp"
#include "archive/file_system.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

class ArchiveStore final : public Archive {
 public:
  explicit ArchiveStore(std::string dir, FileSystem& fs = real_file_system());
  ~ArchiveStore();  // rolls back what was neither committed nor rolled back

  ArchiveStore(const ArchiveStore&) = delete;
  ArchiveStore& operator=(const ArchiveStore&) = delete;

  Expected<std::string> put(std::string_view bytes) override;
  Expected<std::string> put(std::string&& bytes) override;
  Expected<std::string> put(HashedBlob&& blob) override;
  Expected<std::string> put(const char* bytes) { return put(std::string_view(bytes)); }
  const std::string* find(std::string_view receipt) const override;

  // Makes every blob of this run durable and visible (see above).
  Expected<bool> commit();
  void rollback();

  // What a stage wrote can be taken back when its candidate is not committed: mark() before the
  // stage runs, revert_to(mark) when it declines or is rejected.
  struct Mark {
    std::size_t pending = 0;
    std::size_t receipts = 0;
  };
  Mark mark() const { return {pending_.size(), added_.size()}; }
  void revert_to(Mark mark);

  const std::string& dir() const { return dir_; }
  // Where a receipt's blob lives: <dir>/<first two hex digits>/<hex>.
  std::string path_of(std::string_view receipt) const;

 private:
  struct Pending {
    std::string temp;
    std::string final;
  };
  Expected<bool> ensure_folder(const std::string& path);
  // The archive folder (and those above it) and the blob's fan-out folder, each made and checked
  // once per store rather than on every put.
  Expected<bool> ensure_folders_for(const std::string& parent, unsigned fan);
  // Writes the blob under a temporary name unless an intact copy is already in place.
  Expected<bool> write_blob(const std::string& receipt, std::string_view bytes);
  Expected<bool> check_folder_owner();

  std::string dir_;
  FileSystem& fs_;
  std::map<std::string, std::string, std::less<>> manifest_;  // receipt → bytes
  std::vector<std::string> added_;                             // receipts in the order they came
  std::vector<Pending> pending_;
  bool folder_checked_ = false;
  bool folders_made_ = false;
  std::vector<bool> fans_made_ = std::vector<bool>(256);
};

// Reads a blob back, verifying its hash: the original bytes, or an error saying what is wrong
// (malformed receipt, no such blob, hash mismatch) and where.
Expected<std::string> restore_blob(const std::string& dir, std::string_view receipt);

// Removes the temporary blobs (<dir>/<xx>/<hex>.tmp.<pid>.<n>) a process that is gone left behind,
// and nothing else; `compactor run` calls it when its pipeline child died.
void remove_temp_blobs_of(const std::string& dir, pid_t pid);

}  // namespace compactor
