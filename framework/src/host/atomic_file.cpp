#include "host/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <algorithm>
#include <climits>
#include <filesystem>
#include <unistd.h>

namespace compactor {

namespace {

Error errno_error(const std::string& what, const std::string& path, int err) {
  return Error{path + ": " + what + ": " + std::strerror(err)};
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The pieces in order, up to IOV_MAX of them per writev, resumed where a short write stopped.
bool write_all(int fd, const std::vector<std::string_view>& parts) {
  constexpr std::size_t kMaxPieces = IOV_MAX;
  std::vector<iovec> vec;
  vec.reserve(std::min(parts.size(), kMaxPieces));
  std::size_t index = 0, offset = 0;  // the first byte not yet written: parts[index][offset]
  for (;;) {
    while (index < parts.size() && offset == parts[index].size()) ++index, offset = 0;
    if (index == parts.size()) return true;
    vec.clear();
    for (std::size_t i = index; i < parts.size() && vec.size() < kMaxPieces; ++i) {
      std::size_t skip = i == index ? offset : 0;
      if (parts[i].size() > skip) vec.push_back({const_cast<char*>(parts[i].data() + skip), parts[i].size() - skip});
    }
    ssize_t n = ::writev(fd, vec.data(), static_cast<int>(vec.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    for (auto left = static_cast<std::size_t>(n); left > 0;) {
      if (offset == parts[index].size()) {
        ++index, offset = 0;
        continue;
      }
      std::size_t take = std::min(left, parts[index].size() - offset);
      offset += take;
      left -= take;
    }
  }
}

// A flushed, closed temporary beside `path`, named in `temp`; nothing left behind on failure.
Expected<bool> write_temporary(const FileWrite& file, std::string& temp) {
  const std::string& path = file.path;
  std::filesystem::path target(path);
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  temp = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  int fd = ::mkstemp(temp.data());
  if (fd < 0) {
    int err = errno;
    temp.clear();
    return errno_error("cannot create a temporary file beside it", path, err);
  }
  auto give_up = [&](const char* what) {
    int err = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    temp.clear();
    return errno_error(what, path, err);
  };
  // Replacing a file keeps its permission bits: a private output stays private.
  struct stat existing {};
  mode_t mode = ::stat(path.c_str(), &existing) == 0 ? (existing.st_mode & 07777) : 0644;
  if (::fchmod(fd, mode) != 0) return give_up("cannot set permissions");
  if (!(file.parts.empty() ? write_all(fd, file.bytes) : write_all(fd, file.parts))) return give_up("cannot write");
  if (::fsync(fd) != 0) return give_up("cannot flush to disk");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    temp.clear();
    return errno_error("cannot close", path, err);
  }
  return true;
}

}  // namespace

Expected<bool> write_files_atomically(const std::vector<FileWrite>& files) {
  std::vector<std::string> temps(files.size());
  auto remove_temps = [&] {
    for (const auto& t : temps)
      if (!t.empty()) ::unlink(t.c_str());
  };
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i].path == "-") continue;
    auto written = write_temporary(files[i], temps[i]);
    if (!written) {
      remove_temps();
      return written.error();
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i].path == "-") continue;
    if (::rename(temps[i].c_str(), files[i].path.c_str()) != 0) {
      int err = errno;
      remove_temps();
      return errno_error("cannot rename the temporary file into place", files[i].path, err);
    }
    temps[i].clear();
  }
  for (const auto& f : files)
    if (f.path == "-" && !(f.parts.empty() ? write_all(STDOUT_FILENO, f.bytes) : write_all(STDOUT_FILENO, f.parts)))
      return errno_error("cannot write", "<stdout>", errno);
  return true;
}

Expected<bool> write_file_atomically(const std::string& path, std::string_view bytes) {
  return write_files_atomically({FileWrite{path, bytes}});
}

}  // namespace compactor
