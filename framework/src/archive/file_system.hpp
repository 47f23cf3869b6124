// The file-system calls the archive makes, behind an interface so tests can make the k-th call
// fail with a real errno (ENOSPC, EIO, EACCES…), write short, or remove the folder midway: CI
// runs as root, so permission bits alone cannot make a write fail. Every call returns what the
// POSIX call returns and sets errno the same way.
#pragma once

#include <string>
#include <sys/types.h>

namespace compactor {

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual int open_exclusive(const std::string& path, int mode) = 0;  // O_RDWR|O_CREAT|O_EXCL
  virtual ssize_t write(int fd, const void* data, std::size_t size) = 0;
  virtual ssize_t read_at(int fd, void* data, std::size_t size, off_t offset) = 0;  // pread
  virtual int close(int fd) = 0;
  virtual int rename(const std::string& from, const std::string& to) = 0;
  virtual int mkdir(const std::string& path, int mode) = 0;  // EEXIST when it exists
  virtual int unlink(const std::string& path) = 0;
  // Flushes everything written to the file system holding `path` (syncfs): one call makes a whole
  // run's blobs, or its renames, durable.
  virtual int sync_filesystem(const std::string& path) = 0;
  // Flushes one file or folder (fsync): its data and metadata, or a folder's entries. By default
  // the whole file system, which flushes at least as much.
  virtual int sync_file(const std::string& path) { return sync_filesystem(path); }
  virtual bool exists(const std::string& path) = 0;
};

// The real one (POSIX).
FileSystem& real_file_system();

}  // namespace compactor
