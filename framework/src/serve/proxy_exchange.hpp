// One request on its way to the upstream and back, on its connection's I/O thread: a request a
// wire format handles waits for a pipeline (serve/pipeline_queue.hpp) and is forwarded compacted,
// any other is passed through; the upstream's answer streams back as it arrives (paused while the
// client is behind), an error answer is held (bounded) so that a context refusal can run
// on_prompt_too_long and be retried once before the client sees anything.
#pragma once

#include "serve/deployment.hpp"
#include "serve/http_session.hpp"
#include "serve/operator_ledger.hpp"
#include "serve/pipeline_queue.hpp"
#include "serve/serve_metrics.hpp"
#include "serve/upstream_pool.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::serve {

// What every exchange shares with the server.
struct ProxyShared {
  Metrics& metrics;
  PipelineQueue& queue;
  std::atomic<int>& in_flight;               // requests not yet answered (the drain waits for 0)
  std::function<std::string(const std::string&)> tenant_label;  // a tenant as a bounded metric label
  // A failure contained in an exchange (`where`: a short label; `what`: one line naming the
  // request): counted and logged by the server. The exchange ends alone (502, or cut short).
  std::function<void(std::string_view where, std::string_view what)> fault;
  // The upstream answered an unverified tenant's call (an API key's) with a 2xx: keep its storage.
  std::function<void(const std::string&)> vouch;
  // Before a tenant's pipeline runs (on a queue thread, which may wait): a vouch for it still
  // under way ends first, so a key's next call finds itself known.
  std::function<void(const std::string&)> await_vouch;
  // The background summaries a compaction named (serve/summary_pool.hpp), once its call was answered.
  std::function<void(std::shared_ptr<const Deployment>, const std::string& tenant, const std::vector<std::string>& keys)> start_summaries;
  OperatorLedger* ledger = nullptr;  // what /dashboard shows, told of every compaction job's outcome
};

// How the server routed a request.
struct ProxyRoute {
  const wire::WireFormat* compacting = nullptr;  // the format whose conversation is compacted, or null
  const wire::WireFormat* shape = nullptr;       // the API whose error shape the proxy's own errors take
  std::string label;                             // the route in metrics and logs
  std::string upstream;                          // the base URL
  Headers extra;                                 // the server's own headers on the answer
  std::shared_ptr<PipelineQueue::Place> place;   // reserved from the head, for a compacting route
};

// Starts the exchange; it keeps itself alive until the answer is written or the client is gone.
void start_exchange(ProxyShared& shared, std::shared_ptr<const Deployment> deployment, UpstreamPool& pool, Request request,
                    std::shared_ptr<HttpSession> session, ProxyRoute route, std::string tenant);

// Describes every metric an exchange records (once, at start).
void describe_exchange_metrics(Metrics& metrics);

}  // namespace compactor::serve
