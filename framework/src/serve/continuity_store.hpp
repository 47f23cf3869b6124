// Continuity for `compactor serve`: per conversation, the compacted history it sent last, keyed
// by the prefix it stands for (Continuation::prefix_keys). When a request extends a known prefix,
// the pipeline runs on that history plus the messages that arrived since, so successive calls
// share a stable prefix and the prompt cache holds.
//
// The state is content-addressed files beside the archive (`<archive>/serve-state/<key>.json`,
// written atomically), so server processes sharing one archive folder continue each other's
// conversations. A stale or unreadable file is a miss: a full run, never a wrong answer.
// `compactor archive gc` removes files older than its age limit.
#pragma once

#include "session/continuation.hpp"

#include <optional>
#include <string>
#include <vector>

namespace compactor::serve {

class ContinuityStore {
 public:
  explicit ContinuityStore(std::string dir) : dir_(std::move(dir)) {}

  // The history stored for the longest prefix named in `keys` (keys[i] names i+1 messages), with
  // `covered` set; nothing on a miss. One lstat per prefix length, longest first.
  std::optional<SentHistory> longest(const std::vector<std::string>& keys) const;

  // Stores the history sent for the prefix named `key` (atomic, idempotent). An unchanged one is
  // a one-byte marker (nothing to parse back).
  bool put(const std::string& key, const SentHistory& sent) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string path_of(const std::string& key) const;
  std::string dir_;
};

// The folder of the continuity state of an archive folder.
std::string continuity_dir(const std::string& archive_dir);

}  // namespace compactor::serve
