// Writes a whole file or nothing: the bytes go to a temporary file in the same folder, are
// flushed to disk, and the temporary is renamed over the target. On any failure the temporary
// is removed and the target is as it was. "-" writes to standard output.
#pragma once

#include "compactor/error.hpp"

#include <string>
#include <string_view>

namespace compactor {

// Ok is an empty Error-free result; the error names the path and the errno text.
Expected<bool> write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace compactor
