// Writes whole files or nothing: the bytes go to a temporary file in the same folder, are flushed
// to disk, and the temporary is renamed over the target. On any failure the temporaries are
// removed and the targets are as they were. "-" writes to standard output. A target that exists
// keeps its permission bits (a 0600 output stays 0600); a new one is 0644.
#pragma once

#include "compactor/error.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace compactor {

struct FileWrite {
  std::string path;
  std::string_view bytes;
  // When not empty, the file is these pieces in order instead of `bytes` (written with writev):
  // a conversation's frame around its messages' own bytes, with no concatenated copy.
  std::vector<std::string_view> parts = {};
};

// Every temporary is written and flushed before any is renamed, so an unwritable second path
// (a report beside an output) is found before the first target is replaced. Standard output is
// written last. The error names the path and the errno text.
Expected<bool> write_files_atomically(const std::vector<FileWrite>& files);
Expected<bool> write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace compactor
