#include "store/folder_store.hpp"

#include "store/folder_bounds.hpp"

#include "archive/archive_store.hpp"
#include "archive/folder_trust.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>

namespace compactor::store {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t us_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}

// The regular file at `path` (no symbolic link followed, no FIFO waited on); nothing when there is
// none, an error when it cannot be read.
// A state file's bytes, and when it was written (its modification time: the call that sent it).
Expected<std::optional<std::pair<std::string, std::int64_t>>> read_state_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::pair<std::string, std::int64_t>>();
    return Error{"cannot read " + path + ": " + std::strerror(errno)};
  }
  struct stat st {};
  std::optional<std::string> out;
  std::int64_t written_at_ms = 0;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    written_at_ms = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
    out.emplace(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t done = 0;
    while (done < out->size()) {
      ssize_t n = ::read(fd, out->data() + done, out->size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    out->resize(done);
  }
  ::close(fd);
  if (!out) return std::optional<std::pair<std::string, std::int64_t>>();
  return std::optional<std::pair<std::string, std::int64_t>>(std::pair{std::move(*out), written_at_ms});
}

// Written whole (a temporary renamed over the name), 0600, but not flushed to disk: a state file
// is a cache of what was sent, and one that a power loss leaves empty or short reads as a miss (a
// full run), never as a wrong history. Flushing it cost each compacted call about 3 ms.
Expected<bool> write_whole(const std::string& path, std::string_view bytes) {
  // Unique in the process too: serve's threads write states without a worker (the same key at
  // once when a client sends a call twice), and one thread's rename must not take another's file.
  static std::atomic<std::uint64_t> written{0};
  const std::string temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(written++);
  ::unlink(temp.c_str());  // a temporary of a process that had this pid before
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Error{"cannot create " + temp + ": " + std::strerror(errno)};
  int err = 0;
  while (!bytes.empty() && err == 0) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) err = n < 0 ? errno : EIO;
    else bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(temp.c_str(), path.c_str()) != 0) err = errno;
  if (err == 0) return true;
  ::unlink(temp.c_str());
  return Error{"cannot write " + path + ": " + std::strerror(err)};
}

// A run's archive whose commit first admits its blobs under the namespace's bounds: refused,
// the run keeps nothing, and its request goes upstream as it came.
class AdmittedRun final : public RunArchive {
 public:
  AdmittedRun(FolderStore& store, std::unique_ptr<ArchiveStore> run) : store_(store), run_(std::move(run)) {}

  Expected<std::string> put(std::string_view bytes) override { return run_->put(bytes); }
  Expected<std::string> put(std::string&& bytes) override { return run_->put(std::move(bytes)); }
  Expected<std::string> put(HashedBlob&& blob) override { return run_->put(std::move(blob)); }
  const std::string* find(std::string_view receipt) const override { return run_->find(receipt); }
  bool holds(std::string_view receipt, std::uint64_t offset, std::string_view bytes) const override {
    return run_->holds(receipt, offset, bytes);
  }
  std::optional<std::uint64_t> size_of(std::string_view receipt) const override { return run_->size_of(receipt); }
  Mark mark() const override { return run_->mark(); }
  void revert_to(Mark mark) override { run_->revert_to(mark); }
  std::vector<std::string> receipts_since(Mark mark) const override { return run_->receipts_since(mark); }
  void rollback() override { run_->rollback(); }

  // What the commit adds to the folder, charged before it (a loose blob written during the run,
  // rare, is charged with it).
  Expected<bool> commit() override {
    const auto bytes = static_cast<std::int64_t>(run_->commit_size());
    if (bytes > 0)
      if (auto admitted = store_.admit(bytes, "archive"); !admitted) {
        run_->rollback();
        return admitted.error();
      }
    return run_->commit();
  }

 private:
  FolderStore& store_;
  std::unique_ptr<ArchiveStore> run_;
};

}  // namespace

std::string FolderStore::state_dir() const { return dir_ + "/" + kContinuityFolder; }

std::unique_ptr<RunArchive> FolderStore::open_run(FileSystem& fs) {
  settle();
  return std::make_unique<AdmittedRun>(*this, std::make_unique<ArchiveStore>(dir_, fs));
}

// An API key's tenant no upstream has vouched for reads and writes its folder in the unverified
// area, asked once, before anything is read.
void FolderStore::settle() {
  if (settled_) return;
  settled_ = true;
  if (bounds_.by_upstream && !root_.empty() && !folder_tenant_known(root_, tenant_)) {
    dir_ = unverified_folder(root_, tenant_);
    unverified_ = true;
  }
}

Expected<bool> FolderStore::unverified() {
  settle();
  return unverified_;
}

Expected<bool> FolderStore::admit(std::int64_t bytes, const std::string& what) {
  auto fail = [&](const std::string& why) {
    if (what == "archive") failed_blobs(what + ": " + why);
    else failed(counters_.state_put_errors, what + ": " + why);
    return Error{what + ": " + why};
  };
  settle();
  std::string why;
  if (unverified_) {
    auto charged = charge_unverified(root_, tenant_, bytes, bounds_, why);
    if (!charged) return fail(charged.error().message);
    if (!*charged) return over_bound(true, what + ": " + why);
    counters_.unverified = true;  // the area bounds it, not the tenant's own bound
    return true;
  }
  if (bounds_.tenant_bytes <= 0) return true;
  auto used = charge_usage(dir_, bytes, bounds_.tenant_bytes, why);
  if (!used) return fail(used.error().message);
  if (!*used) return over_bound(false, what + ": " + why);
  counters_.usage_bytes = **used;
  return true;
}

// An API key's receipt is looked for in its unverified folder too: what its first call archived
// is there until the vouch its 2xx started has moved it.
Expected<std::string> FolderStore::restore(std::string_view receipt) {
  settle();
  auto found = restore_blob(dir_, receipt);
  if (found || root_.empty() || !is_key_tenant(tenant_) || unverified_) return found;
  auto pending = restore_blob(unverified_folder(root_, tenant_), receipt);
  return pending ? pending : found;
}

Expected<std::optional<StoredState>> FolderStore::longest_state(const std::vector<std::string>& keys, std::size_t count) {
  settle();
  const auto started = Clock::now();
  auto done = [&](Expected<std::optional<StoredState>> out) {
    counters_.state_get_us = us_since(started);
    if (!out) failed(counters_.state_get_errors, out.error().message);
    return out;
  };
  // Whoever else can write either folder could plant a history, which would be forwarded as the
  // user's own: such a folder is not read.
  for (const std::string& folder : {dir_, state_dir()})
    if (auto distrust = archive_folder_distrust(folder)) return done(Error{"continuity state not read: " + *distrust});
  for (std::size_t k = std::min(count, keys.size()); k > 0; --k) {
    if (!is_state_key(keys[k - 1])) continue;
    auto read = read_state_file(state_dir() + "/" + keys[k - 1] + ".json");
    if (!read) return done(read.error());
    if (*read) {
      read_key_ = keys[k - 1];
      read_bytes_ = (*read)->first;
      return done(std::optional<StoredState>(StoredState{k, std::move((*read)->first), (*read)->second}));
    }
  }
  return done(std::optional<StoredState>());
}

// A superseded state file stays until gc: files cost disk, not memory.
Expected<bool> FolderStore::put_state(const std::string& key, std::string_view bytes, const std::string&) {
  settle();
  const auto started = Clock::now();
  auto done = [&](Expected<bool> out) {
    counters_.state_put_us = us_since(started);
    if (!out) failed(counters_.state_put_errors, out.error().message);
    return out;
  };
  if (!is_state_key(key)) return done(Error{"\"" + key + "\" is not a state key"});
  // The archive's own folder rules: made 0700, refused when another user could write it.
  if (auto made = make_private_folder(state_dir()); !made) return done(made.error());
  for (const std::string& folder : {dir_, state_dir()})
    if (auto distrust = archive_folder_distrust(folder)) return done(Error{"continuity state not written: " + *distrust});
  const std::string path = state_dir() + "/" + key + ".json";
  // The same history for the same prefix: only its time changes (when it was last sent, which
  // the cost gate reads as the prompt cache's idle time). A new file would cost an inode and a
  // rename for nothing.
  if (key == read_key_ && bytes == read_bytes_ && ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW) == 0)
    return done(true);
  struct stat before {};
  const std::int64_t replaced = ::lstat(path.c_str(), &before) == 0 && S_ISREG(before.st_mode) ? before.st_size : 0;
  if (auto admitted = admit(static_cast<std::int64_t>(bytes.size()) - replaced, "continuity state"); !admitted) {
    counters_.state_put_us = us_since(started);
    return admitted.error();  // counted by admit
  }
  return done(write_whole(path, bytes));
}

namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The time a lease file says it ends (ms since the epoch); 0 when it says nothing readable.
std::int64_t lease_end(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  return n > 0 ? std::strtoll(text, nullptr, 10) : 0;
}

}  // namespace

// The lease is a file created exclusively, holding when it ends. An ended one is taken over under
// an exclusive flock of the file, after reading its end again, so two takers cannot both see it ended.
Expected<bool> FolderStore::take_lease(const std::string& key, std::int64_t ttl_ms) {
  settle();
  if (!is_state_key(key)) return Error{"\"" + key + "\" is not a state key"};
  if (auto made = make_private_folder(state_dir()); !made) return made.error();
  const std::string path = state_dir() + "/" + key + ".lease";
  const std::string end = std::to_string(wall_ms() + ttl_ms);
  int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    const bool written = ::write(fd, end.data(), end.size()) == static_cast<ssize_t>(end.size());
    ::close(fd);
    return written ? Expected<bool>(true) : Expected<bool>(Error{"cannot write the lease " + path + ": " + std::strerror(errno)});
  }
  if (errno != EEXIST) return Error{"cannot create the lease " + path + ": " + std::strerror(errno)};
  fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;  // released meanwhile: whoever released it may take it again
  bool taken = false;
  if (::flock(fd, LOCK_EX) == 0 && lease_end(fd) <= wall_ms())
    taken = ::ftruncate(fd, 0) == 0 && ::pwrite(fd, end.data(), end.size(), 0) == static_cast<ssize_t>(end.size());
  ::close(fd);  // lets the flock go
  return taken;
}

void FolderStore::release_lease(const std::string& key) {
  settle();
  if (is_state_key(key)) ::unlink((state_dir() + "/" + key + ".lease").c_str());
}

// What gc removed is no longer held: the namespace is measured again at its next write.
Expected<ArchiveGcResult> FolderStore::collect_garbage(std::chrono::hours keep, bool dry_run) {
  auto collected = collect_archive_garbage(dir_, keep, dry_run);
  if (!dry_run) forget_usage(dir_);
  return collected;
}

}  // namespace compactor::store
