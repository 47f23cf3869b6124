#include "archive/archive_store.hpp"

#include "archive/folder_trust.hpp"

#include <nettle/sha2.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <mutex>
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

constexpr std::string_view kPackFolder = "pack";
constexpr std::string_view kPackSuffix = ".pack";
constexpr std::string_view kPackTrailer = "compactor-pack 1 ";  // + 20 digits (the index's offset) + '\n'
constexpr std::size_t kTrailerSize = 17 + 20 + 1;

// Where one blob sits in a pack.
struct PackEntry {
  std::string pack;  // the pack's path
  std::uint64_t offset = 0, length = 0;
};

// The packs this process has read the index of, per archive folder: packs are immutable once in
// place (a pack renamed over another under the same name has the same index), so an index is
// read once; a pack that gc removed is found missing when its blob is read.
struct PackIndexCache {
  std::mutex mutex;
  std::map<std::string, std::map<std::string, PackEntry, std::less<>>, std::less<>> by_dir;  // dir → hex → entry
  std::map<std::string, std::map<std::string, bool, std::less<>>, std::less<>> seen;         // dir → pack names read
};

PackIndexCache& pack_cache() {
  static PackIndexCache cache;
  return cache;
}

bool parse_u64(std::string_view text, std::uint64_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// Reads the index of the pack at `path` into `into` (hex → entry); a pack that is not a regular
// file, or whose trailer or index does not parse, adds nothing.
void read_pack_index(const std::string& path, std::map<std::string, PackEntry, std::less<>>& into) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return;
  struct stat st {};
  std::string trailer(kTrailerSize, '\0'), index;
  std::uint64_t index_at = 0, size = 0;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) >= kTrailerSize;
  if (ok) {
    size = static_cast<std::uint64_t>(st.st_size);
    ok = ::pread(fd, trailer.data(), kTrailerSize, static_cast<off_t>(size - kTrailerSize)) == static_cast<ssize_t>(kTrailerSize) &&
         trailer.compare(0, kPackTrailer.size(), kPackTrailer) == 0 && trailer.back() == '\n' &&
         parse_u64(std::string_view(trailer).substr(kPackTrailer.size(), 20), index_at) && index_at <= size - kTrailerSize;
  }
  if (ok) {
    index.resize(static_cast<std::size_t>(size - kTrailerSize - index_at));
    ok = index.empty() || ::pread(fd, index.data(), index.size(), static_cast<off_t>(index_at)) == static_cast<ssize_t>(index.size());
  }
  ::close(fd);
  if (!ok) return;
  // "<64 hex> <offset> <length>\n" per blob
  std::string_view rest = index;
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) return;
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
    std::size_t a = line.find(' '), b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    PackEntry e{path, 0, 0};
    if (a != 64 || b == std::string_view::npos || !parse_u64(line.substr(a + 1, b - a - 1), e.offset) ||
        !parse_u64(line.substr(b + 1), e.length) || e.offset > index_at || e.length > index_at - e.offset)
      return;
    bool hex = true;
    for (char c : line.substr(0, 64)) hex = hex && is_hex(c);
    if (hex) into.emplace(std::string(line.substr(0, 64)), std::move(e));
  }
}

// Where `hex` is packed in `dir`, reading the index of every pack not read yet when it is not
// known.
std::optional<PackEntry> find_packed(const std::string& dir, const std::string& hex) {
  PackIndexCache& cache = pack_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto& known = cache.by_dir[dir];
  if (auto it = known.find(hex); it != known.end()) return it->second;
  auto& seen = cache.seen[dir];
  const std::string folder = dir + "/" + std::string(kPackFolder);
  std::error_code ec;
  if (std::filesystem::is_symlink(folder, ec)) return std::nullopt;
  for (const auto& e : std::filesystem::directory_iterator(folder, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() != 64 + kPackSuffix.size() || !name.ends_with(kPackSuffix) || seen.count(name)) continue;
    seen.emplace(name, true);
    read_pack_index(e.path().string(), known);
  }
  if (auto it = known.find(hex); it != known.end()) return it->second;
  return std::nullopt;
}

// Drops what is known of `dir`'s packs, so that the next lookup reads every index there again.
void forget_packs(const std::string& dir) {
  PackIndexCache& cache = pack_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.by_dir.erase(dir);
  cache.seen.erase(dir);
}

// The bytes `entry` locates, if they hash to `receipt`.
std::optional<std::string> read_packed(const PackEntry& entry, std::string_view receipt) {
  int fd = ::open(entry.pack.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::string out;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && entry.offset + entry.length <= static_cast<std::uint64_t>(st.st_size);
  if (ok) {
    out.resize(static_cast<std::size_t>(entry.length));
    std::size_t done = 0;
    while (ok && done < out.size()) {
      ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(entry.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ok = false;
      else done += static_cast<std::size_t>(n);
    }
  }
  ::close(fd);
  if (!ok || receipt_of(out) != receipt) return std::nullopt;
  return out;
}

// The blob `hex` from a pack of `dir`, verified; nullopt when no pack holds it intact. What this
// process knew of the folder may be stale (gc removed a pack, or the folder was made anew): on a
// miss it reads every index there again, once.
std::optional<std::string> restore_packed(const std::string& dir, const std::string& hex, std::string_view receipt) {
  if (auto entry = find_packed(dir, hex))
    if (auto bytes = read_packed(*entry, receipt)) return bytes;
  forget_packs(dir);
  if (auto entry = find_packed(dir, hex)) return read_packed(*entry, receipt);
  return std::nullopt;
}

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

namespace {

std::string receipt_of(const std::string_view* pieces, std::size_t count) {
  std::uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_ctx context;
  sha256_init(&context);
  for (std::size_t i = 0; i < count; ++i)
    sha256_update(&context, pieces[i].size(), reinterpret_cast<const std::uint8_t*>(pieces[i].data()));
  sha256_digest(&context, SHA256_DIGEST_SIZE, digest);
  static const char* hex = "0123456789abcdef";
  std::string out(kPrefix);
  out.reserve(kPrefix.size() + 2 * SHA256_DIGEST_SIZE);
  for (std::size_t i = 0; i < SHA256_DIGEST_SIZE; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace

std::string receipt_of(std::string_view bytes) { return receipt_of(&bytes, 1); }

std::string receipt_of(const std::vector<std::string_view>& pieces) { return receipt_of(pieces.data(), pieces.size()); }

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
  if (fs_.mkdir(path, 0700) == 0) made_folders_.push_back(path);
  else if (errno != EEXIST) return errno_error("create folder", path, errno);
  return true;
}

Expected<bool> ArchiveStore::ensure_archive_folder() {
  if (!folders_made_) {
    // The archive folder and each folder above it that is missing.
    for (std::size_t slash = dir_.find('/', 1); slash != std::string::npos; slash = dir_.find('/', slash + 1))
      if (auto r = ensure_folder(dir_.substr(0, slash)); !r) return r.error();
    if (auto r = ensure_folder(dir_); !r) return r.error();
    folders_made_ = true;
  }
  return check_folder_owner();
}

Expected<bool> ArchiveStore::check_folder_owner() {
  // Another user who can write the folder can plant, replace or remove blobs: refused, once.
  if (folder_checked_) return true;
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0) return errno_error("inspect", dir_, errno);
  if (auto distrust = archive_folder_distrust(dir_)) return Error{"archive: " + *distrust};
  folder_checked_ = true;
  return true;
}

// Written from the caller's bytes, which put() does not keep: no copy.
Expected<std::string> ArchiveStore::put(std::string_view bytes) { return put(HashedBlob(std::vector<std::string_view>{bytes})); }

Expected<std::string> ArchiveStore::put(std::string&& bytes) { return put(HashedBlob(std::move(bytes))); }

Expected<std::string> ArchiveStore::put(HashedBlob&& blob) {
  read_back_.clear();
  std::string receipt = blob.receipt_;
  if (manifest_.count(receipt)) return receipt;
  // Taken from the caller, and freed on return once packed: a large snapshot is not held twice.
  std::string bytes = std::move(blob.bytes_);
  std::vector<std::string_view> pieces = std::move(blob.pieces_);
  if (pieces.empty()) pieces.emplace_back(bytes);
  Stored stored;
  // A file already at the blob's loose name is the blob only if it holds these very bytes; a
  // corrupted or planted one (a symlink to /dev/null) is replaced by the blob, loose, so that
  // restore (which reads a loose blob first) finds the right bytes there. Rare: such a blob
  // stays in memory, joined.
  const std::string final_path = path_of(receipt);
  struct stat st {};
  if (::lstat(final_path.c_str(), &st) == 0) {
    if (bytes.empty())
      for (std::string_view piece : pieces) bytes += piece;
    if (!regular_file_holds(final_path, bytes))
      if (auto r = write_loose(final_path, bytes); !r) return r.error();
    stored.bytes = std::move(bytes);
  } else {
    if (auto r = append_to_pack(receipt, pieces); !r) return r.error();
    stored.packed = true;
    stored.offset = packed_.back().offset;
    stored.length = packed_.back().length;
  }
  manifest_.emplace(receipt, std::move(stored));
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
    if (fan.path().filename() == "tenants") {  // each tenant's archive folder (store/store.hpp)
      for (const auto& tenant : fs::directory_iterator(fan.path(), ec))
        if (tenant.is_directory(ec) && !tenant.is_symlink(ec)) remove_temp_blobs_of(tenant.path().string(), pid);
      continue;
    }
    for (const auto& f : fs::directory_iterator(fan.path(), ec)) {
      std::string name = f.path().filename().string();
      if (name.find(marker) != std::string::npos && f.is_regular_file(ec) && !f.is_symlink(ec)) fs::remove(f.path(), ec);
    }
  }
}

Expected<bool> ArchiveStore::append_to_pack(const std::string& receipt, const std::vector<std::string_view>& pieces) {
  if (pack_fd_ < 0) {
    const std::string folder = dir_ + "/" + std::string(kPackFolder);
    if (!folders_made_ || !pack_folder_made_) {
      if (auto r = ensure_archive_folder(); !r) return r.error();
      if (auto r = ensure_folder(folder); !r) return r.error();
      pack_folder_made_ = true;
    } else if (auto r = check_folder_owner(); !r) {
      return r.error();
    }
    // Unique within the process (threads share the pid) and across processes (the pid).
    static std::atomic<std::uint64_t> packs{0};
    std::string temp = folder + "/pack.tmp." + std::to_string(::getpid()) + "." + std::to_string(packs++);
    int fd = fs_.open_exclusive(temp, 0600);
    if (fd < 0) {
      int err = errno;
      // A folder went away during the run: this put fails, and the next one makes them again.
      if (err == ENOENT) forget_folders();
      return errno_error("create", temp, err);
    }
    pack_fd_ = fd;
    pack_temp_ = temp;
    pack_size_ = 0;
  }
  const std::uint64_t offset = pack_size_;
  // What was written of a failed blob stays in the pack, unindexed; the offset stays exact.
  // Small pieces (a snapshot's messages) go out in batches of up to kBatch bytes, large ones
  // directly: few writes, and no copy of the whole blob.
  constexpr std::size_t kBatch = 64 * 1024;
  std::string batch;
  auto flush = [&]() -> Expected<bool> {
    if (batch.empty()) return true;
    auto r = write_all(pack_fd_, batch, pack_temp_, &pack_size_);
    batch.clear();
    return r;
  };
  std::uint64_t length = 0;
  for (std::string_view piece : pieces) {
    length += piece.size();
    if (batch.size() + piece.size() <= kBatch) {
      if (batch.capacity() < kBatch) batch.reserve(kBatch);
      batch += piece;
      continue;
    }
    if (auto r = flush(); !r) return r.error();
    if (auto r = write_all(pack_fd_, piece, pack_temp_, &pack_size_); !r) return r.error();
  }
  if (auto r = flush(); !r) return r.error();
  packed_.push_back({receipt, offset, length});
  return true;
}

Expected<bool> ArchiveStore::write_all(int fd, std::string_view bytes, const std::string& path, std::uint64_t* written) {
  while (!bytes.empty()) {
    ssize_t n = fs_.write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return errno_error(n < 0 ? "write" : "write (short write)", path, n < 0 ? errno : EIO);
    bytes.remove_prefix(static_cast<std::size_t>(n));
    if (written != nullptr) *written += static_cast<std::uint64_t>(n);
  }
  return true;
}

void ArchiveStore::forget_folders() {
  folders_made_ = false;
  pack_folder_made_ = false;
  fans_made_.assign(256, false);
}

Expected<bool> ArchiveStore::write_loose(const std::string& final_path, std::string_view bytes) {
  // Parent folders, then the blob under a temporary name nobody else can be using.
  std::string parent = final_path.substr(0, final_path.rfind('/'));
  const std::string hex = final_path.substr(final_path.size() - 64);
  const unsigned fan = static_cast<unsigned>(std::stoul(hex.substr(0, 2), nullptr, 16));
  if (auto r = ensure_archive_folder(); !r) return r.error();
  if (!fans_made_[fan]) {
    if (auto r = ensure_folder(parent); !r) return r.error();
    fans_made_[fan] = true;
  }
  std::string temp = final_path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(pending_.size());
  int fd = fs_.open_exclusive(temp, 0600);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) forget_folders();
    return errno_error("create", temp, err);
  }
  if (auto r = write_all(fd, bytes, temp); !r) {
    fs_.close(fd);
    fs_.unlink(temp);
    return r.error();
  }
  if (fs_.close(fd) != 0) {
    int err = errno;
    fs_.unlink(temp);
    return errno_error("close", temp, err);
  }
  pending_.push_back({temp, final_path});
  return true;
}

const std::string* ArchiveStore::find(std::string_view receipt) const {
  auto it = manifest_.find(receipt);
  if (it == manifest_.end()) return nullptr;
  if (!it->second.packed) return &it->second.bytes;
  if (auto cached = read_back_.find(receipt); cached != read_back_.end()) return &cached->second;
  auto bytes = read_back(receipt, it->second);
  // Unreadable: the checker finds nothing archived and rejects the candidate, never passes it.
  if (!bytes) return nullptr;
  return &read_back_.emplace(std::string(receipt), std::move(*bytes)).first->second;
}

std::optional<std::uint64_t> ArchiveStore::size_of(std::string_view receipt) const {
  auto it = manifest_.find(receipt);
  if (it == manifest_.end()) return std::nullopt;
  return it->second.packed ? it->second.length : it->second.bytes.size();
}

bool ArchiveStore::holds(std::string_view receipt, std::uint64_t offset, std::string_view bytes) const {
  auto it = manifest_.find(receipt);
  if (it == manifest_.end()) return false;
  const Stored& stored = it->second;
  const std::uint64_t size = stored.packed ? stored.length : stored.bytes.size();
  if (offset > size || bytes.size() > size - offset) return false;
  if (!stored.packed) return std::string_view(stored.bytes).substr(offset, bytes.size()) == bytes;
  if (auto cached = read_back_.find(receipt); cached != read_back_.end())
    return std::string_view(cached->second).substr(offset, bytes.size()) == bytes;
  if (pack_fd_ < 0) {  // committed: compare with the blob read back whole
    const std::string* whole = find(receipt);
    return whole != nullptr && std::string_view(*whole).substr(offset, bytes.size()) == bytes;
  }
  // Compared a chunk at a time: no more than a chunk of the blob in memory. Unreadable means
  // not held, as far as anyone can tell.
  char chunk[16 * 1024];
  std::uint64_t at = stored.offset + offset;
  while (!bytes.empty()) {
    const std::size_t n = std::min(sizeof chunk, bytes.size());
    if (!read_pack_at(chunk, n, at) || std::memcmp(chunk, bytes.data(), n) != 0) return false;
    bytes.remove_prefix(n);
    at += n;
  }
  return true;
}

std::optional<std::string> ArchiveStore::bytes_of(std::string_view receipt) const {
  auto it = manifest_.find(receipt);
  if (it == manifest_.end()) return std::nullopt;
  if (!it->second.packed) return it->second.bytes;
  return read_back(receipt, it->second);
}

std::optional<std::string> ArchiveStore::read_back(std::string_view receipt, const Stored& stored) const {
  if (pack_fd_ < 0) {  // committed: the pack has its final name
    auto restored = restore_blob(dir_, receipt);
    if (!restored) return std::nullopt;
    return std::move(*restored);
  }
  std::string bytes(stored.length, '\0');
  if (!read_pack_at(bytes.data(), bytes.size(), stored.offset)) return std::nullopt;
  return bytes;
}

bool ArchiveStore::read_pack_at(char* data, std::size_t size, std::uint64_t offset) const {
  while (size > 0) {
    ssize_t n = fs_.read_at(pack_fd_, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

Expected<bool> ArchiveStore::commit_pack() {
  if (pack_fd_ < 0) return true;
  if (packed_.empty()) {  // every blob was taken back: nothing to keep
    drop_pack();
    return true;
  }
  // The index, then the trailer that locates it; the pack is named by their hash, so two runs
  // that pack the same blobs the same way write the same name, and either file serves.
  std::string tail;
  tail.reserve(packed_.size() * 90 + kTrailerSize);
  for (const Packed& p : packed_)
    tail += p.receipt.substr(kPrefix.size()) + " " + std::to_string(p.offset) + " " + std::to_string(p.length) + "\n";
  char digits[21];
  std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(pack_size_));
  tail += std::string(kPackTrailer) + digits + "\n";
  if (auto r = write_all(pack_fd_, tail, pack_temp_); !r) {
    rollback();
    return r.error();
  }
  int fd = pack_fd_;
  pack_fd_ = -1;
  if (fs_.close(fd) != 0) {
    Error e = errno_error("close", pack_temp_, errno);
    rollback();
    return e;
  }
  const std::string final_path = dir_ + "/" + std::string(kPackFolder) + "/" + receipt_of(tail).substr(kPrefix.size()) +
                                 std::string(kPackSuffix);
  pending_.push_back({pack_temp_, final_path});
  pack_temp_.clear();
  return true;
}

void ArchiveStore::drop_pack() {
  if (pack_fd_ >= 0) fs_.close(pack_fd_);
  pack_fd_ = -1;
  if (!pack_temp_.empty()) fs_.unlink(pack_temp_);
  pack_temp_.clear();
  packed_.clear();
  pack_size_ = 0;
}

std::uint64_t ArchiveStore::commit_size() const {
  std::uint64_t size = 0;
  for (const Pending& p : pending_) {  // loose blobs waiting for their rename (rare)
    struct stat st {};
    if (!p.temp.empty() && ::lstat(p.temp.c_str(), &st) == 0) size += static_cast<std::uint64_t>(st.st_size);
  }
  if (pack_fd_ < 0 || packed_.empty()) return size;
  size += pack_size_ + kTrailerSize;
  for (const Packed& p : packed_)  // the index line commit_pack() writes for each
    size += 64 + std::to_string(p.offset).size() + std::to_string(p.length).size() + 3;
  return size;
}

Expected<bool> ArchiveStore::commit() {
  read_back_.clear();
  const bool loose = !pending_.empty();  // loose blobs pending before the pack joins them
  if (auto packed = commit_pack(); !packed) return packed.error();
  if (pending_.empty()) return true;
  // With one pack and no loose blob, its data is flushed with one fsync and its name, after the
  // rename, with an fsync of the pack folder and the archive folder (and of the folder above each
  // folder this store made, whose names must reach the disk too): nothing else needs to, and other processes'
  // writes are not waited for, as syncfs would. Loose blobs take the whole file system, twice.
  const bool narrow = !loose;
  if ((narrow ? fs_.sync_file(pending_.back().temp) : fs_.sync_filesystem(dir_)) != 0) {
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
  if (!narrow) {
    if (fs_.sync_filesystem(dir_) != 0) return errno_error("sync", dir_, errno);
    return true;
  }
  // The pack folder (the pack's name) and the archive folder (the pack folder's, which another
  // process may have made and not yet flushed).
  std::vector<std::string> folders{dir_ + "/" + std::string(kPackFolder), dir_};
  for (const std::string& made : made_folders_) {
    std::size_t slash = made.rfind('/');
    folders.push_back(slash == std::string::npos ? "." : slash == 0 ? "/" : made.substr(0, slash));
  }
  std::sort(folders.begin(), folders.end());
  folders.erase(std::unique(folders.begin(), folders.end()), folders.end());
  for (const std::string& folder : folders)
    if (fs_.sync_file(folder) != 0) return errno_error("sync", folder, errno);
  return true;
}

void ArchiveStore::revert_to(Mark mark) {
  read_back_.clear();
  for (std::size_t i = mark.pending; i < pending_.size(); ++i)
    if (!pending_[i].temp.empty()) fs_.unlink(pending_[i].temp);
  if (pending_.size() > mark.pending) pending_.resize(mark.pending);
  // Packed blobs taken back stay in the pack's file, out of its index.
  for (std::size_t i = added_.size(); i > mark.receipts; --i)
    if (!packed_.empty() && packed_.back().receipt == added_[i - 1]) packed_.pop_back();
  for (std::size_t i = mark.receipts; i < added_.size(); ++i) manifest_.erase(added_[i]);
  if (added_.size() > mark.receipts) added_.resize(mark.receipts);
}

void ArchiveStore::rollback() {
  drop_pack();
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
  if (::lstat(path.c_str(), &st) != 0) {
    // Not loose: in a pack, or nowhere.
    int err = errno;
    if (auto packed = restore_packed(dir, hex, receipt)) return std::move(*packed);
    struct stat folder {};
    const int folder_err = ::stat(dir.c_str(), &folder) != 0 ? errno : S_ISDIR(folder.st_mode) ? 0 : ENOTDIR;
    if (folder_err != 0)
      return Error{dir + ": no such archive folder (" + std::strerror(folder_err) +
                   "): nothing was archived there yet, or the archive is elsewhere (a relative archive.dir is read "
                   "from the folder a command runs in; --archive names another)"};
    return Error{dir + ": no blob " + std::string(receipt) + " in this archive (no loose file " + path + ": " +
                 std::strerror(err) + "; no pack indexes it)"};
  }
  auto read = read_regular_file(path, UINT64_MAX);
  if (!read) return read.error();
  std::string out = std::move(read).value();
  if (receipt_of(out) != receipt) return Error{path + ": the blob does not match its hash (the archive is corrupted)"};
  return out;
}

}  // namespace compactor
