// Continuity for `compactor serve`: per conversation, the compacted history it sent last, keyed
// by a hash of the uncompacted prefix it came from. An agent sends its whole, uncompacted history
// every call; when a request extends a known prefix, the pipeline runs on the compacted history
// sent for that prefix plus the messages that arrived since (the rule `compactor bench` replays),
// so successive calls share a stable prefix.
//
// The state is content-addressed files beside the archive (`<archive>/serve-state/<hash>.json`,
// a messages array, written atomically), so server processes sharing one archive folder continue
// each other's conversations. `cache_control` is ignored in the key and never stored.
#pragma once

#include "compactor/conversation.hpp"

#include <optional>
#include <string>
#include <vector>

namespace compactor::serve {

// The messages without `cache_control` on any block (a message without it is the same pointer).
std::vector<MessagePtr> without_cache_control(const std::vector<MessagePtr>& messages);

// The bytes of one JSON value without its `cache_control` members (the same bytes when none).
std::string without_cache_control(std::string_view raw);

// Chain hashes of the prefixes: result[i] names messages [0, i+1) and the system entries placed
// up to just after message i (`entries` without cache_control, at `slots`), 64 hex digits each.
std::vector<std::string> prefix_hashes(const std::vector<MessagePtr>& stripped,
                                       const std::vector<std::string>& entries = {},
                                       const std::vector<std::size_t>& slots = {});

class StateStore {
 public:
  explicit StateStore(std::string dir) : dir_(std::move(dir)) {}

  // The longest stored prefix: its length k (messages of the request it covers) and the
  // compacted messages sent for it; nothing on a miss.
  struct Hit {
    std::size_t covered = 0;
    std::vector<MessagePtr> sent;
    bool unchanged = false;  // what was sent is the uncompacted prefix itself (`sent` left empty)
    std::vector<std::size_t> system_slots;  // where the covered system entries sit in `sent`
  };
  std::optional<Hit> longest(const std::vector<std::string>& hashes) const;

  // Stores the compacted history sent for the prefix named `hash` (atomic, idempotent). When it
  // is the uncompacted prefix itself, only a one-byte marker is written (no copy to parse back).
  // The slots of the system entries covered are stored with it (entries that share a slot were
  // sent joined); the entries are the request's, which the hash names.
  bool put(const std::string& hash, const std::vector<MessagePtr>& sent, bool unchanged,
           const std::vector<std::size_t>& slots = {}) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string path_of(const std::string& hash) const;
  std::string dir_;
};

}  // namespace compactor::serve
