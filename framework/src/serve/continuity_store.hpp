// Continuity for `compactor serve`: per conversation, the compacted history it sent last, keyed
// by the prefix it stands for (Continuation::prefix_keys). When a request extends a known prefix,
// the pipeline runs on that history plus the messages that arrived since, so successive calls
// share a stable prefix and the prompt cache holds.
//
// The state lives in the tenant's store (store/store.hpp): files beside the archive
// (`<archive>/serve-state/<key>.json`, 0600, written atomically) or Redis keys, so server
// processes sharing one archive folder, or one Redis, continue each other's conversations. A
// stale or unreadable entry is a miss: a full run, never a wrong answer. A store that fails is a
// miss too (or a state not kept), counted in the store's counters: the request goes on.
#pragma once

#include "session/continuation.hpp"
#include "store/store.hpp"

#include <optional>
#include <string>
#include <vector>

namespace compactor::serve {

class ContinuityStore {
 public:
  explicit ContinuityStore(store::Store& store) : store_(store) {}

  // The history stored for the longest prefix named in `keys` (keys[i] names i+1 messages), with
  // `covered` set; nothing on a miss or when the store failed (counted there).
  std::optional<SentHistory> longest(const std::vector<std::string>& keys) const;

  // Stores the history sent for the prefix named `key` (atomic, idempotent); false when the
  // store failed (counted there). An unchanged one is a one-byte marker (nothing to parse back).
  // `supersedes`: the key of the state this call continued from (empty on a miss).
  bool put(const std::string& key, const SentHistory& sent, const std::string& supersedes = "") const;

  // Both, as the continuation rule takes them (Continuation::resume and commit).
  SentHistories histories() const {
    return {[this](const std::vector<std::string>& keys) { return longest(keys); },
            [this](const std::string& key, const SentHistory& sent, const std::string& supersedes) { put(key, sent, supersedes); }};
  }

 private:
  store::Store& store_;
};

}  // namespace compactor::serve
