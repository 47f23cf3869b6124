// The rule of a living session: before each model call, the request is the compacted history
// sent last time plus the messages that arrived since, and the pipeline runs on that. `serve`
// applies it to live traffic (the history it sent is stored per conversation) and `bench`
// replays recorded sessions with it (the history it sent is the previous call's output), through
// this one component, so a bench result predicts what the server does.
//
// An agent sends its whole, uncompacted history every call, and moves its `cache_control`
// breakpoints to the newest messages. So histories are compared, keyed and stored without
// `cache_control`, and the client's breakpoints are put back on the messages the pipeline left
// alone when the request goes out.
#pragma once

#include "compactor/conversation.hpp"
#include "compactor/error.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

// What was sent for the first `covered` messages of a conversation (and the system entries
// placed up to just after them): the compacted messages, and where those entries sat among them.
struct SentHistory {
  std::size_t covered = 0;
  bool unchanged = false;  // what was sent is that prefix itself (`messages` is then empty)
  std::vector<MessagePtr> messages;
  std::vector<std::size_t> system_slots;
  // When it was sent, in Unix milliseconds (0: unknown): how long the prompt cache has been idle,
  // for the cost gate. Filled by the store that kept it.
  std::int64_t sent_at_ms = 0;
};

// A request resumed from what was sent before: its prefix keys, the stored history it continues
// (nothing on a miss) and the pipeline's input made of them.
struct Resumed {
  std::vector<std::string> keys;
  std::optional<SentHistory> stored;
  Conversation input;
};

// How a caller reads and writes its stored histories (serve's continuity store, a test's map).
struct SentHistories {
  // The history stored for the longest of `keys` (keys[i] names i+1 messages), `covered` set.
  std::function<std::optional<SentHistory>(const std::vector<std::string>& keys)> longest;
  // Keeps `sent` for the prefix `key`; `supersedes`: the key the call continued from (or empty).
  std::function<void(const std::string& key, const SentHistory& sent, const std::string& supersedes)> put;
};

class Continuation {
 public:
  // `request`: the whole history the agent sends for this call, as read.
  explicit Continuation(Conversation request);

  const Conversation& request() const { return request_; }

  // The key of each prefix of the request: keys[i] names messages [0, i+1) and the system
  // entries placed up to just after message i, cache_control cut, in `scope` (a wire format's
  // name: the same messages in two APIs are two conversations). 64 hex digits each.
  std::vector<std::string> prefix_keys(std::string_view scope) const;

  // Whether `sent` can stand for the request's first `sent.covered` messages: the system
  // entries it placed are the ones the request has there. (A history that does not is a miss.)
  bool continues_from(const SentHistory& sent) const;

  // The pipeline's input: `sent` followed by the request's messages past `sent.covered`, or the
  // request itself without one; cache_control cut, the system entries at their slots.
  Conversation input(const SentHistory* sent) const;

  // What to remember as sent for the whole request once the pipeline made `output` from input().
  SentHistory sent_for(const Conversation& output) const;

  // The call's start in one step: the keys in `scope`, the longest stored history the request
  // continues (a stored one it cannot stand for is a miss) and the input made of them.
  Resumed resume(std::string_view scope, const SentHistories& histories) const;

  // The call's end in one step, once the pipeline made `output` from `resumed.input`: the body to
  // forward (`write` turns the history, the client's breakpoints back on it, into the API's form;
  // nothing: the client's own body goes, as the history is the request's), and what was sent is
  // stored for the whole request, only once that body exists. An error: `write`'s (nothing stored).
  Expected<std::optional<std::string>> commit(const Resumed& resumed, const Conversation& output,
                                              const std::function<Expected<std::string>(const Conversation&)>& write,
                                              const SentHistories& histories) const;

  // `output` with the client's cache_control breakpoints back on the messages that carried them
  // and that the pipeline left alone, never more than the API's 4 in all (those outside the
  // messages counted first; the newest kept).
  Conversation with_breakpoints(const Conversation& output) const;

 private:
  // The request's messages from `begin` on, without cache_control (cut once, then kept).
  const std::vector<MessagePtr>& stripped(std::size_t begin) const;
  std::size_t entries_through(std::size_t covered) const;

  Conversation request_;
  mutable std::vector<MessagePtr> stripped_;  // [stripped_from_, size) are cut
  mutable std::size_t stripped_from_;
};

// The bytes of one message or system entry without the breakpoints a client set on its blocks
// (`cache_control` on a block of its content, or of a block's content), byte for byte otherwise;
// a `cache_control` inside a tool's input is the user's data and stays.
std::string without_breakpoints(std::string_view raw);

}  // namespace compactor
