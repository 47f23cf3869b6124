#include "compactor/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
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

}  // namespace

Expected<bool> write_file_atomically(const std::string& path, std::string_view bytes) {
  if (path == "-") {
    if (!write_all(STDOUT_FILENO, bytes)) return errno_error("cannot write", "<stdout>", errno);
    return true;
  }
  std::filesystem::path target(path);
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::string temp = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  int fd = ::mkstemp(temp.data());
  if (fd < 0) return errno_error("cannot create a temporary file beside it", path, errno);
  auto give_up = [&](const char* what) {
    int err = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    return errno_error(what, path, err);
  };
  if (::fchmod(fd, 0644) != 0) return give_up("cannot set permissions");
  if (!write_all(fd, bytes)) return give_up("cannot write");
  if (::fsync(fd) != 0) return give_up("cannot flush to disk");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return errno_error("cannot close", path, err);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return errno_error("cannot rename the temporary file into place", path, err);
  }
  return true;
}

}  // namespace compactor
