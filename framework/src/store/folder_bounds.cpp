#include "store/folder_bounds.hpp"

#include "archive/archive_gc.hpp"
#include "archive/folder_trust.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fmt/core.h>

namespace compactor::store {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsageFile = "usage";
constexpr const char* kUnverifiedFolder = "unverified";

// An open descriptor held under an exclusive flock until it goes.
class Locked {
 public:
  explicit Locked(int fd) : fd_(fd) {
    if (fd_ >= 0)
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {}
  }
  ~Locked() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// The number a record holds (its whole text); nothing when it holds none.
std::optional<std::int64_t> read_number(int fd) {
  char text[32];
  ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return std::nullopt;
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text, text + n, value);
  if (ec != std::errc() || (end != text + n && *end != '\n')) return std::nullopt;
  return value;
}

// Written in place at a fixed width: truncating a file to rewrite it makes ext4 flush it on close
// (auto_da_alloc), which cost a state write about a millisecond here.
bool write_number(int fd, std::int64_t value) {
  const std::string text = fmt::format("{:020}\n", value);
  return ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
}

// What a namespace folder holds: its packs, loose blobs and state files (a default namespace's
// tenants and unverified area are theirs, not its). Temporaries are not: a run's pack being
// written is charged when it commits.
std::int64_t measure(const std::string& dir) {
  std::int64_t total = 0;
  std::error_code ec;
  for (const auto& sub : fs::directory_iterator(dir, ec)) {
    const std::string name = sub.path().filename().string();
    const bool counted = name == "pack" || name == kContinuityFolder ||
                         (name.size() == 2 && name.find_first_not_of("0123456789abcdef") == std::string::npos);
    if (!counted || sub.is_symlink(ec) || !sub.is_directory(ec)) continue;
    for (const auto& f : fs::directory_iterator(sub.path(), ec))
      if (!f.is_symlink(ec) && f.is_regular_file(ec) && f.path().filename().string().find(".tmp.") == std::string::npos)
        total += static_cast<std::int64_t>(f.file_size(ec));
  }
  return total;
}

int open_record(const std::string& path) { return ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600); }

}  // namespace

Expected<std::optional<std::int64_t>> charge_usage(const std::string& dir, std::int64_t bytes, std::int64_t max, std::string& why) {
  if (auto made = make_private_folder(dir); !made) return made.error();
  const std::string path = dir + "/" + kUsageFile;
  Locked record(open_record(path));
  if (record.fd() < 0) return Error{"cannot open " + path + ": " + std::strerror(errno)};
  const std::optional<std::int64_t> recorded = read_number(record.fd());
  const std::int64_t used = recorded ? *recorded : measure(dir);
  if (max > 0 && bytes > 0 && used + bytes > max) {
    why = fmt::format("{} holds {} bytes, and {} more would pass serve.tenant_max_bytes ({})", dir, used, bytes, max);
    return std::optional<std::int64_t>();
  }
  const std::int64_t now = std::max<std::int64_t>(0, used + bytes);
  if (!write_number(record.fd(), now)) return Error{"cannot write " + path + ": " + std::strerror(errno)};
  return std::optional<std::int64_t>(now);
}

void forget_usage(const std::string& dir) { ::unlink((dir + "/" + kUsageFile).c_str()); }

std::string unverified_folder(const std::string& root, const std::string& tenant) {
  return root + "/" + kUnverifiedFolder + "/" + tenant;
}

bool folder_tenant_known(const std::string& root, const std::string& tenant) {
  struct stat st {};
  return ::lstat(tenant_folder(root, tenant).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

namespace {

// When a namespace folder was last written: its usage record's time (each charge rewrites it),
// else the folder's own.
fs::file_time_type last_write(const fs::path& folder) {
  std::error_code ec;
  auto t = fs::last_write_time(folder / kUsageFile, ec);
  return ec ? fs::last_write_time(folder, ec) : t;
}

std::int64_t held_by(const fs::path& folder) {
  const int fd = ::open((folder / kUsageFile).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  std::optional<std::int64_t> held = fd >= 0 ? read_number(fd) : std::nullopt;
  if (fd >= 0) ::close(fd);
  return held ? *held : measure(folder.string());
}

// The area's folder, locked; made when missing.
Expected<int> lock_area(const std::string& root) {
  const std::string area = root + "/" + kUnverifiedFolder;
  if (auto made = make_private_folder(area); !made) return made.error();
  const int fd = ::open(area.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Error{"cannot open " + area + ": " + std::strerror(errno)};
  return fd;
}

// Moves the files of namespace folder `from` into `to` (the same layout; a name already there
// holds the same bytes, or a state for the same prefix): a vouch that found the tenant's folder
// made meanwhile by another.
Expected<bool> merge_into(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  for (const auto& sub : fs::directory_iterator(from, ec)) {
    if (sub.is_symlink(ec) || !sub.is_directory(ec)) continue;
    const fs::path target = to / sub.path().filename();
    if (auto made = make_private_folder(target.string()); !made) return made.error();
    for (const auto& f : fs::directory_iterator(sub.path(), ec)) {
      const std::string name = f.path().filename().string();
      if (f.is_symlink(ec) || !f.is_regular_file(ec) || name.find(".tmp.") != std::string::npos) continue;
      if (::rename(f.path().c_str(), (target / name).c_str()) != 0)
        return Error{"cannot move " + f.path().string() + " to " + target.string() + ": " + std::strerror(errno)};
    }
  }
  forget_usage(to.string());
  fs::remove_all(from, ec);
  return true;
}

}  // namespace

Expected<bool> charge_unverified(const std::string& root, const std::string& tenant, std::int64_t bytes, const TenantBounds& bounds,
                                 std::string& why) {
  auto fd = lock_area(root);
  if (!fd) return fd.error();
  Locked lock(*fd);
  // Drop what is past its time; add up the rest.
  const auto oldest = fs::file_time_type::clock::now() - std::chrono::seconds(bounds.unverified_ttl_s);
  std::int64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root + "/" + kUnverifiedFolder, ec)) {
    if (!is_tenant_id(e.path().filename().string()) || e.is_symlink(ec) || !e.is_directory(ec)) continue;
    if (last_write(e.path()) < oldest) fs::remove_all(e.path(), ec);
    else total += held_by(e.path());
  }
  if (bytes > 0 && total + bytes > bounds.unverified_bytes) {
    why = fmt::format("the area for API keys no upstream answer has vouched for yet holds {} bytes, and {} more would pass "
                      "serve.unverified_max_bytes ({})",
                      total, bytes, bounds.unverified_bytes);
    return false;
  }
  std::string unbounded;
  auto charged = charge_usage(unverified_folder(root, tenant), bytes, 0, unbounded);
  if (!charged) return charged.error();
  return true;
}

Expected<bool> vouch_folder_tenant(const std::string& root, const std::string& tenant) {
  auto fd = lock_area(root);
  if (!fd) return fd.error();
  Locked lock(*fd);
  const std::string from = unverified_folder(root, tenant), to = tenant_folder(root, tenant);
  struct stat st {};
  if (::lstat(from.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return make_private_folder(to);
  if (folder_tenant_known(root, tenant)) return merge_into(from, to);
  if (auto made = make_private_folder(root + "/tenants"); !made) return made.error();
  if (::rename(from.c_str(), to.c_str()) == 0) return true;
  return Error{"cannot move " + from + " to " + to + ": " + std::strerror(errno)};
}

}  // namespace compactor::store
