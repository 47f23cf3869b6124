#include "archive/archive_store.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <filesystem>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

namespace compactor {
namespace {

constexpr std::string_view kPrefix = "sha256:";

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

Error errno_error(const std::string& what, const std::string& path, int err) {
  return Error{"archive: cannot " + what + " " + path + ": " + std::strerror(err)};
}

std::string fmt_mode(const std::string& before, mode_t mode) {
  char octal[8];
  std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode & 07777));
  return before + octal;
}

// The bytes of the regular file at `path`, at most `max` of them. A symlink is not followed
// (O_NOFOLLOW) and a FIFO is not waited on (O_NONBLOCK): neither is a blob, whatever its name.
Expected<std::string> read_regular_file(const std::string& path, std::uint64_t max) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    if (err == ELOOP) return Error{path + ": is a symbolic link, not a blob (the archive was tampered with)"};
    return Error{path + ": no such blob (" + std::string(std::strerror(err)) + ")"};
  }
  struct stat st {};
  std::string out;
  auto give_up = [&](const std::string& why) {
    ::close(fd);
    return Error{path + ": " + why};
  };
  if (::fstat(fd, &st) != 0) return give_up(std::string("cannot read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return give_up("is not a regular file, not a blob (the archive was tampered with)");
  if (static_cast<std::uint64_t>(st.st_size) > max) return give_up("is larger than the blob it should be");
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return give_up(n < 0 ? std::string("cannot read: ") + std::strerror(errno) : "shrank while being read");
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return out;
}

}  // namespace

namespace {

// Whether `path` is a regular file (not through a link) holding exactly `bytes`, compared a
// chunk at a time so that checking a 1 GB blob costs no 1 GB copy.
bool regular_file_holds(const std::string& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  struct stat st {};
  bool same = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) == bytes.size();
  std::vector<char> chunk(same ? std::min<std::size_t>(bytes.size(), 1 << 20) : 0);
  for (std::size_t done = 0; same && done < bytes.size();) {
    ssize_t n = ::read(fd, chunk.data(), std::min(chunk.size(), bytes.size() - done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || std::memcmp(chunk.data(), bytes.data() + done, static_cast<std::size_t>(n)) != 0) same = false;
    else done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return same;
}

}  // namespace

std::string receipt_of(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out(kPrefix);
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

bool is_receipt(std::string_view text) {
  if (text.size() != kPrefix.size() + 64 || text.substr(0, kPrefix.size()) != kPrefix) return false;
  for (char c : text.substr(kPrefix.size()))
    if (!is_hex(c)) return false;
  return true;
}

std::vector<std::string> find_receipts(std::string_view text) {
  std::vector<std::string> out;
  for (std::size_t pos = text.find(kPrefix); pos != std::string_view::npos; pos = text.find(kPrefix, pos + 1)) {
    std::string_view candidate = text.substr(pos, kPrefix.size() + 64);
    bool boundary = pos + kPrefix.size() + 64 >= text.size() || !is_hex(text[pos + kPrefix.size() + 64]);
    if (is_receipt(candidate) && boundary) out.emplace_back(candidate);
  }
  return out;
}

ArchiveStore::ArchiveStore(std::string dir, FileSystem& fs) : dir_(std::move(dir)), fs_(fs) {}

ArchiveStore::~ArchiveStore() { rollback(); }

std::string ArchiveStore::path_of(std::string_view receipt) const {
  std::string_view hex = receipt.substr(kPrefix.size());
  return dir_ + "/" + std::string(hex.substr(0, 2)) + "/" + std::string(hex);
}

Expected<bool> ArchiveStore::ensure_folder(const std::string& path) {
  // A stat first: mkdir of a folder that exists fails with EEXIST, but costs a dozen times more
  // (in a bench replay, each call's store finds every folder there already).
  if (fs_.exists(path)) return true;
  if (fs_.mkdir(path, 0700) != 0 && errno != EEXIST) return errno_error("create folder", path, errno);
  return true;
}

Expected<bool> ArchiveStore::ensure_folders_for(const std::string& parent, unsigned fan) {
  if (!folders_made_) {
    // The archive folder and each folder above it that is missing.
    for (std::size_t slash = dir_.find('/', 1); slash != std::string::npos; slash = dir_.find('/', slash + 1))
      if (auto r = ensure_folder(dir_.substr(0, slash)); !r) return r.error();
    if (auto r = ensure_folder(dir_); !r) return r.error();
    folders_made_ = true;
  }
  if (auto r = check_folder_owner(); !r) return r.error();
  if (!fans_made_[fan]) {
    if (auto r = ensure_folder(parent); !r) return r.error();
    fans_made_[fan] = true;
  }
  return true;
}

Expected<bool> ArchiveStore::check_folder_owner() {
  // Another user who can write the folder can plant, replace or remove blobs: refused, once.
  if (folder_checked_) return true;
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0) return errno_error("inspect", dir_, errno);
  if (st.st_mode & S_IWOTH)
    return Error{fmt_mode("archive: " + dir_ + " is writable by every user (mode ", st.st_mode) +
                 "), who could plant or remove blobs; run chmod o-w on it or use a folder of your own"};
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return Error{"archive: " + dir_ + " belongs to another user (uid " + std::to_string(st.st_uid) + "; this is uid " +
                 std::to_string(::geteuid()) + "), who could plant or remove blobs; use a folder of your own"};
  folder_checked_ = true;
  return true;
}

Expected<std::string> ArchiveStore::put(std::string_view bytes) { return put(std::string(bytes)); }

Expected<std::string> ArchiveStore::put(std::string&& bytes) { return put(HashedBlob(std::move(bytes))); }

Expected<std::string> ArchiveStore::put(HashedBlob&& blob) {
  std::string receipt = blob.receipt_;
  if (manifest_.count(receipt)) return receipt;
  if (auto written = write_blob(receipt, blob.bytes_); !written) return written.error();
  manifest_.emplace(receipt, std::move(blob.bytes_));  // the run's only copy of a large snapshot
  added_.push_back(receipt);
  return receipt;
}

void remove_temp_blobs_of(const std::string& dir, pid_t pid) {
  namespace fs = std::filesystem;
  const std::string marker = ".tmp." + std::to_string(pid) + ".";
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec) || fs::is_symlink(dir, ec)) return;
  for (const auto& fan : fs::directory_iterator(dir, ec)) {
    if (!fan.is_directory(ec) || fan.is_symlink(ec)) continue;
    for (const auto& f : fs::directory_iterator(fan.path(), ec)) {
      std::string name = f.path().filename().string();
      if (name.find(marker) != std::string::npos && f.is_regular_file(ec) && !f.is_symlink(ec)) fs::remove(f.path(), ec);
    }
  }
}

Expected<bool> ArchiveStore::write_blob(const std::string& receipt, std::string_view bytes) {
  std::string final_path = path_of(receipt);
  // A file already at the blob's name is the blob only if it holds these very bytes; a corrupted
  // or planted one (a symlink to /dev/null) is replaced.
  bool intact = fs_.exists(final_path) && regular_file_holds(final_path, bytes);
  if (!intact) {
    // Parent folders, then the blob under a temporary name nobody else can be using.
    std::string parent = final_path.substr(0, final_path.rfind('/'));
    const unsigned fan = static_cast<unsigned>(std::stoul(receipt.substr(kPrefix.size(), 2), nullptr, 16));
    if (auto r = ensure_folders_for(parent, fan); !r) return r.error();
    std::string temp = final_path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(pending_.size());
    int fd = fs_.open_exclusive(temp, 0600);
    if (fd < 0) {
      int err = errno;
      // A folder went away during the run: this put fails, as it did when folders were made on
      // every put, and the next one makes them again.
      if (err == ENOENT) {
        folders_made_ = false;
        fans_made_.assign(256, false);
      }
      return errno_error("create", temp, err);
    }
    std::string_view rest = bytes;
    while (!rest.empty()) {
      ssize_t n = fs_.write(fd, rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = n < 0 ? errno : EIO;
        fs_.close(fd);
        fs_.unlink(temp);
        return errno_error(n < 0 ? "write" : "write (short write)", temp, err);
      }
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    if (fs_.close(fd) != 0) {
      int err = errno;
      fs_.unlink(temp);
      return errno_error("close", temp, err);
    }
    pending_.push_back({temp, final_path});
  }
  return true;
}

const std::string* ArchiveStore::find(std::string_view receipt) const {
  auto it = manifest_.find(receipt);
  return it == manifest_.end() ? nullptr : &it->second;
}

Expected<bool> ArchiveStore::commit() {
  if (pending_.empty()) return true;
  if (fs_.sync_filesystem(dir_) != 0) {
    Error e = errno_error("sync", dir_, errno);
    rollback();
    return e;
  }
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    Pending& p = pending_[i];
    if (fs_.rename(p.temp, p.final) != 0) {
      Error e = errno_error("rename into place", p.final, errno);
      rollback();
      return e;
    }
    p.temp.clear();
  }
  pending_.clear();
  if (fs_.sync_filesystem(dir_) != 0) return errno_error("sync", dir_, errno);
  return true;
}

void ArchiveStore::revert_to(Mark mark) {
  for (std::size_t i = mark.pending; i < pending_.size(); ++i)
    if (!pending_[i].temp.empty()) fs_.unlink(pending_[i].temp);
  if (pending_.size() > mark.pending) pending_.resize(mark.pending);
  for (std::size_t i = mark.receipts; i < added_.size(); ++i) manifest_.erase(added_[i]);
  if (added_.size() > mark.receipts) added_.resize(mark.receipts);
}

void ArchiveStore::rollback() {
  for (Pending& p : pending_)
    if (!p.temp.empty()) fs_.unlink(p.temp);
  pending_.clear();
}

Expected<std::string> restore_blob(const std::string& dir, std::string_view receipt) {
  if (!is_receipt(receipt))
    return Error{"\"" + std::string(receipt) + "\" is not a receipt (expected sha256: and 64 lowercase hex digits)"};
  std::string hex(receipt.substr(kPrefix.size()));
  std::string path = dir + "/" + hex.substr(0, 2) + "/" + hex;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return Error{path + ": no such blob in the archive " + dir + " (" + std::strerror(errno) + ")"};
  auto read = read_regular_file(path, UINT64_MAX);
  if (!read) return read.error();
  std::string out = std::move(read).value();
  if (receipt_of(out) != receipt) return Error{path + ": the blob does not match its hash (the archive is corrupted)"};
  return out;
}

}  // namespace compactor
