// What the server and its pipeline workers say to each other. Each request is one job: the server
// hands the zygote (serve/zygote_main.hpp) the request body in a memfd and one end of a
// socketpair; the worker forked for it answers on that socket:
//   "P <pid>"           first, with a pidfd of itself (how the server stops it, race-free);
//   "S <stage>\t<file>"  a stage started, "E" it ended (host/child_run.hpp's progress lines);
//   "R <outcome json>"  last, with a memfd holding the body to forward (when there is one).
// Messages are SOCK_SEQPACKET datagrams: each arrives whole, and end of file means the worker is
// gone.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace compactor::serve {

// The server's request to the zygote.
struct Job {
  std::string wire;              // the wire format's name
  bool prompt_too_long = false;  // run on_prompt_too_long (the upstream refused the context)
  // Whose state and archive the worker reads and writes ([a-z0-9][a-z0-9_-]{0,63}; the server
  // fills it); empty: the default namespace. No look-up of the worker leaves it.
  std::string tenant;
  std::string model;  // the model a request names outside its body (Gemini's URL); empty: the body's
  // Not empty: the job is this background summary's (serve/background_summary.hpp), not a request's.
  std::string summary_key;
};

// What became of one request's compaction: the worker's answer, or the server's account of a
// worker that did not give one.
struct JobOutcome {
  // passed: a request of the API that is not a conversation to compact (the adapter says why).
  enum Result { compacted, unchanged, refused, failed, passed } result = failed;
  std::string warning;  // refused and failed: one line, what and where; passed: why
  std::string status;   // the pipeline's report status (ok, over_budget, …)
  std::string unit;     // the budget's unit, for the size metrics
  std::uint64_t size_in = 0, size_out = 0;  // the pipeline's input and output
  std::uint64_t size_received = 0;          // the client's whole history (size_in unless continued)
  std::vector<std::pair<std::string, std::string>> stage_statuses;  // stage, status (skipped ones too)
  std::vector<std::int64_t> stage_us;
  std::int64_t parse_us = 0, state_us = 0, stages_us = 0, write_us = 0;
  std::size_t messages = 0, covered = 0;  // request messages; those continued from a stored history
  bool state_hit = false;
  std::int64_t peak_rss_kb = 0;  // the worker's peak resident memory
  // The store (continuity state and archived blobs): each operation's time (-1: not done), the
  // failures by operation, the first one in a line. `store_fault`: the store failed where the
  // request needed it (the archive could not be shipped), so it went upstream as it came; it is
  // never refused for that, whatever serve.on_failure says.
  struct StoreReport {
    std::string kind;  // folder, redis
    std::int64_t state_get_us = -1, state_put_us = -1, blobs_put_us = -1;
    int state_get_errors = 0, state_put_errors = 0, blob_errors = 0;
    std::string error;
    // Writes refused by the tenant's bound or the unverified area's (serve.tenant_max_bytes,
    // unverified_max_bytes); what the namespace holds after (-1: not known); and whether the
    // tenant is an API key's no upstream answer has vouched for yet: a 2xx to this call vouches.
    int over_tenant_bound = 0, over_unverified_bound = 0;
    std::int64_t usage_bytes = -1;
    bool unverified = false;
    int state_rejected = 0;  // stored states that did not verify (Redis: not signed with our secret): misses
  } store;
  bool store_fault = false;
  // The budget's window and the model it is for (`budget: {window: auto}`; 0 and empty otherwise).
  std::string model;
  std::uint64_t window = 0, limit = 0;
  // What the forwarded body saves against the received one: tokens by the config's meter under
  // any budget unit (serve/call_savings.hpp), and USD at the model's uncached input price (0 when
  // not priced). What serve's per-tenant metrics add up.
  std::uint64_t saved_tokens = 0;
  double saved_usd = 0;
  // Whether this call's pipeline changed the history it was given. A continued call forwards an
  // earlier call's compaction (result compacted) without changing anything itself: `unchanged`.
  bool changed = false;
  // The receipts this call archived, in order: at most kMaxReceipts (the answer is one datagram),
  // and how many there were.
  static constexpr std::size_t kMaxReceipts = 64;
  std::vector<std::string> receipts;
  std::size_t receipt_count = 0;
  // The cost gate, when it weighed a compaction: its decision and both figures (USD).
  bool gated = false, gate_commit = true;
  double gate_saved_usd = 0, gate_broken_usd = 0;
  // Background summaries this call's worker took the lease of (serve starts them once the call's
  // answer came), and the stand-ins it replaced with a model's summary.
  std::vector<std::string> background_summaries;
  int summaries_replaced = 0;

  // The x-compactor-status value: `compacted` only when this call changed the history and the
  // forwarded body is within the budget; `over_budget` when the pipeline ran and it is still over
  // (changed or not), `declined` when the cost gate kept the body, `deferred` when the request asks
  // the API to make room itself; `unchanged` when this call changed nothing (even when it forwards
  // an earlier call's compaction); otherwise the result's name. The warning, when there is one, says why.
  std::string_view status_header() const;

  boost::json::object to_json() const;
  static std::optional<JobOutcome> from_json(std::string_view text);
};

std::string_view to_string(JobOutcome::Result result);

// One datagram with up to 4 file descriptors; false when the peer is gone.
bool send_message(int socket, std::string_view text, const std::vector<int>& fds = {});

// Waits up to `timeout_ms` (-1: no limit) for one datagram. Nothing on timeout; an empty text
// with `closed` set at end of file. Received descriptors are close-on-exec.
struct Received {
  std::string text;
  std::vector<int> fds;
  bool closed = false;
};
std::optional<Received> receive_message(int socket, int timeout_ms);

// A memfd holding `bytes` (sealed size not needed: each side reads what the other wrote); -1 on
// failure with errno set.
int memfd_with(std::string_view name, std::string_view bytes);
// The whole contents of a file descriptor from offset 0.
std::string read_whole(int fd);

}  // namespace compactor::serve
