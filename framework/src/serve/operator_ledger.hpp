// What the gateway's page (serve/dashboard_page.hpp) shows of the calls so far, kept as each
// call's compaction ends: per tenant its calls, compactions and what they saved, the last
// compactions (a bounded ring), and how the store answered the last call that used it. Kept in
// memory, from the server's start (a restart begins again; /metrics has the counters to keep).
#pragma once

#include "serve/job_protocol.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace compactor::serve {

class OperatorLedger {
 public:
  static constexpr std::size_t kRecent = 50;  // compactions kept for the page

  struct Tenant {
    std::uint64_t calls = 0, compactions = 0, saved_tokens = 0;
    double saved_usd = 0;
    std::int64_t store_bytes = -1;  // what its namespace held after its last write (-1: not known)
  };
  struct Compaction {
    std::int64_t unix_ms = 0;
    std::string tenant, unit;
    std::uint64_t before = 0, after = 0;  // what the client sent, what went on
    std::vector<std::string> receipts;    // at most JobOutcome::kMaxReceipts
    std::size_t receipt_count = 0;
  };
  struct Store {
    std::string kind;             // folder, redis; empty until a call used it
    std::int64_t unix_ms = 0;     // when a call last used it
    bool failing = false;         // that call saw an error
    std::string error;            // its first, one line
  };
  struct Snapshot {
    std::map<std::string, Tenant> tenants;  // by label, as /metrics names them
    std::vector<Compaction> recent;         // newest first
    Store store;
  };

  // A configured client: on the page at zero from the start.
  void know(const std::string& tenant);
  // One compaction job's outcome for `tenant` (its metrics label), at `unix_ms`.
  void record(const std::string& tenant, const JobOutcome& outcome, std::int64_t unix_ms);
  Snapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Tenant> tenants_;
  std::deque<Compaction> recent_;
  Store store_;
};

}  // namespace compactor::serve
