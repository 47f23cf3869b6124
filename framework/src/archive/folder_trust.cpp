#include "archive/folder_trust.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace compactor {

std::optional<std::string> archive_folder_distrust(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return std::nullopt;  // missing: the store makes it, 0700
  if (st.st_mode & S_IWOTH) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return dir + " is writable by every user (mode " + mode +
           "), who could plant or remove blobs; run chmod o-w on it or use a folder of your own";
  }
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return dir + " belongs to another user (uid " + std::to_string(st.st_uid) + "; this is uid " +
           std::to_string(::geteuid()) + "), who could plant or remove blobs; use a folder of your own";
  return std::nullopt;
}

Expected<bool> make_private_folder(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return true;
  for (std::size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string folder = slash == std::string::npos ? dir : dir.substr(0, slash);
    if (!folder.empty() && ::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST)
      return Error{"cannot create folder " + folder + ": " + std::strerror(errno)};
    if (slash == std::string::npos) return true;
  }
}

}  // namespace compactor
