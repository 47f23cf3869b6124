// Small helpers the built-in checkers share (Compactor's invariants here, and the Messages API's
// rules in wire/anthropic/).
#pragma once

#include "compactor/checker.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace compactor::detail {

// A hash for whole messages' (or archived lines') bytes that reads at most 192 of them: the
// length and 64 bytes at the start, the middle and the end. Equal bytes hash equal, and the table
// still compares whole keys, so lookups find exactly what std::hash would; hashing every byte of
// a 3.8 MB input cost about 3% of a run. Tool results share their first bytes (the
// JSON around the id) and often their last (a trailer), so the middle is sampled too.
struct SampledBytesHash {
  std::size_t operator()(std::string_view bytes) const noexcept {
    constexpr std::size_t kSample = 64;
    std::hash<std::string_view> h;
    if (bytes.size() <= 2 * kSample) return h(bytes);
    std::size_t seed = h(bytes.substr(0, kSample));
    seed ^= h(bytes.substr(bytes.size() / 2 - kSample / 2, kSample)) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    seed ^= h(bytes.substr(bytes.size() - kSample)) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    seed ^= bytes.size() + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    return seed;
  }
};

// The messages of a conversation by identity: a candidate message found here is untouched.
class MessageIdentity {
 public:
  explicit MessageIdentity(const Conversation& conversation) {
    set_.reserve(conversation.size() * 2);
    for (const MessagePtr& m : conversation.messages()) set_.insert(m.get());
  }
  bool contains(const Message* m) const { return set_.count(m) != 0; }

 private:
  std::unordered_set<const Message*> set_;
};

// True when the candidate is the very same sequence of messages as `before`.
inline bool same_messages(const CheckInput& in) {
  if (&in.before == &in.candidate) return true;
  const auto& a = in.before.messages();
  const auto& b = in.candidate.messages();
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

inline Violation violation(std::string_view checker, std::size_t index, std::string what,
                           std::vector<std::string> ids = {}) {
  Violation v;
  v.checker = std::string(checker);
  v.message_index = index;
  v.what = std::move(what);
  v.ids = std::move(ids);
  return v;
}

inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

std::unique_ptr<Checker> make_pairs_unchanged_checker();
std::unique_ptr<Checker> make_thinking_unchanged_checker();
std::unique_ptr<Checker> make_recent_intact_checker();
std::unique_ptr<Checker> make_request_kept_checker();
std::unique_ptr<Checker> make_no_growth_checker();
std::unique_ptr<Checker> make_archived_checker();
std::unique_ptr<Checker> make_order_checker();

}  // namespace compactor::detail
