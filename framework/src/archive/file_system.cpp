#include "archive/file_system.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compactor {
namespace {

class PosixFileSystem final : public FileSystem {
 public:
  int open_exclusive(const std::string& path, int mode) override {
    return ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  }
  ssize_t write(int fd, const void* data, std::size_t size) override { return ::write(fd, data, size); }
  ssize_t read_at(int fd, void* data, std::size_t size, off_t offset) override {
    return ::pread(fd, data, size, offset);
  }
  int close(int fd) override { return ::close(fd); }
  int rename(const std::string& from, const std::string& to) override { return ::rename(from.c_str(), to.c_str()); }
  int mkdir(const std::string& path, int mode) override { return ::mkdir(path.c_str(), static_cast<mode_t>(mode)); }
  int unlink(const std::string& path) override { return ::unlink(path.c_str()); }
  int sync_filesystem(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // a folder or a file: any one of the file system
    if (fd < 0) return -1;
    int rc = ::syncfs(fd);
    int err = errno;
    ::close(fd);
    errno = err;
    return rc;
  }
  int sync_file(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    errno = err;
    return rc;
  }
  bool exists(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }
};

}  // namespace

FileSystem& real_file_system() {
  static PosixFileSystem fs;
  return fs;
}

}  // namespace compactor
