// Whether an archive folder can be trusted: another user who can write it can plant, replace or
// remove blobs. The store refuses such a folder at its first put, `run` and `serve` warn about it
// when they start, and the MCP server refuses to serve it.
#pragma once

#include "compactor/error.hpp"

#include <optional>
#include <string>

namespace compactor {

// Nothing when `dir` is missing or trustworthy (owned by this user or root, not writable by every
// user); otherwise one line starting with `dir` that says what is wrong and what to do.
std::optional<std::string> archive_folder_distrust(const std::string& dir);

// Makes `dir` and every missing folder above it, each 0700 (what the archive's own folders are);
// an error names the folder that could not be made.
Expected<bool> make_private_folder(const std::string& dir);

}  // namespace compactor
