// The evidence the agent used, and what a compaction that hid it costs. At a call, a probe is a
// line of the original's next assistant action (its text and its tool inputs, not its thinking),
// trimmed and at least LineSearch::kWindow bytes long, that occurs verbatim in an earlier tool
// output and nowhere in the user's or the agent's own earlier words: content the agent could only
// have had from a tool, which it went on to use. It is visible when a string of the request sent
// at that call holds it. Only calls with probes are measured.
//
// A missed probe is charged as the call an agent makes to get it back: the history sent at that
// call read from the cache, the smallest earlier result holding the line written, and
// kRefetchOutputTokens of output; once per (call, result). The re-read is not added to the
// history of later calls, so the charge is a lower bound.
#pragma once

#include "bench/line_search.hpp"

#include "compactor/conversation.hpp"
#include "compactor/meter.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace compactor::bench {

// About what a call that asks for a result again writes: the tool call itself.
inline constexpr std::uint64_t kRefetchOutputTokens = 50;

struct EvidenceMiss {
  std::uint64_t call = 0;  // 1-based
  std::string line;
  std::string from;  // the result it came from: "Read /src/app.py (toolu_01…, message 12)"
};

// One replay's evidence: the probes of the calls that have some, and the re-fetch charge.
struct Evidence {
  std::uint64_t calls = 0, probes = 0, visible = 0;
  std::uint64_t refetches = 0;  // (call, result) pairs charged
  std::uint64_t refetch_read = 0, refetch_write = 0, refetch_output = 0;  // their tokens
  std::uint64_t refetch_nusd = 0;  // priced with the session's model, like its cost
  std::vector<EvidenceMiss> misses;
};

// The probes of every call of one session, found once and measured against each config's replay.
class EvidenceIndex {
 public:
  // A call happens before each of `answers` (message indexes of `session`, ascending); results
  // are sized with `meter`, the replay's.
  EvidenceIndex(const Conversation& session, const std::vector<std::size_t>& answers, const Meter& meter);

  std::size_t probes(std::size_t call) const { return call < by_call_.size() ? by_call_[call].size() : 0; }

 private:
  friend class EvidenceMeter;
  struct Probe {
    std::uint32_t line = 0;    // in lines_
    std::uint32_t result = 0;  // in results_: the smallest earlier result holding it
  };
  struct Result {
    std::size_t message = 0, block = 0;
    std::uint64_t bytes = 0, tokens = 0;  // tokens: counted for the results probes name
    std::string from;
  };

  // What one pass over the session found, by line: the first message whose own words hold it,
  // and the results holding it.
  struct Found {
    std::vector<std::size_t> own_first;
    std::vector<std::vector<std::uint32_t>> in_results;
  };
  Found scan(const Conversation& session);

  LineSearch lines_;
  std::vector<std::vector<Probe>> by_call_;
  std::vector<Result> results_;
  std::vector<std::vector<std::uint32_t>> holders_;  // by line: the messages of the session holding it
  std::unordered_map<const Message*, std::uint32_t> message_index_;
};

// Measures one replay's calls against a session's index. A message a pipeline wrote is read once
// (remembered by pointer: a replay carries it from call to call); the session's own messages
// were read by the index.
class EvidenceMeter {
 public:
  explicit EvidenceMeter(const EvidenceIndex& index) : index_(index) {}

  // Call `call`'s probes against the request `sent` (of `sent_tokens`), added to `out`.
  void measure(std::size_t call, const Conversation& sent, std::uint64_t sent_tokens, Evidence& out);

 private:
  const std::vector<std::uint32_t>& lines_in(const MessagePtr& message);

  const EvidenceIndex& index_;
  std::unordered_map<const Message*, std::pair<MessagePtr, std::vector<std::uint32_t>>> written_;
  std::vector<std::uint32_t> stamp_;  // by session message: the epoch of the last request holding it
  std::uint32_t epoch_ = 0;
};

// The trimmed lines of an action's string that can be probes: a patch's (apply_patch, a unified
// diff) `-`/`+`/context prefix removed and its headers left out. Exposed for the tests.
std::vector<std::string> action_lines(std::string_view text);

}  // namespace compactor::bench
