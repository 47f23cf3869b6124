// Where serve writes background summaries (serve/background_summary.hpp): threads of their own,
// never the pipeline queue's, so a model that takes minutes holds no request's pipeline. Each
// summary runs in a worker of the deployment's zygote, as a request's compaction does: the
// summarizer is plugin code, and no plugin code runs in the server process (its HTTP call,
// libcurl, is made from that worker). A summary is started once the call that needed it was
// answered with a 2xx (a call refused, or whose client left, starts nothing: its lease ends and
// the conversation's next call starts it). Past summarizer.background_timeout_s the worker is
// stopped; each end is one line and compactor_serve_background_summaries_total{result}. A summary
// still waiting when serve stops is dropped: its lease ends, and the next call starts it again.
#pragma once

#include "serve/deployment.hpp"
#include "serve/serve_metrics.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace compactor::serve {

class SummaryPool {
 public:
  struct Task {
    std::shared_ptr<const Deployment> deployment;
    std::string tenant, key;
  };
  // `await_vouch`: called before a tenant's summary runs (an API key's storage is settled first).
  SummaryPool(Metrics& metrics, std::function<void(const std::string&)> await_vouch, std::size_t threads = 1,
              std::size_t max_waiting = 256);
  // Stops the running summaries' workers and drops the waiting ones.
  ~SummaryPool();
  SummaryPool(const SummaryPool&) = delete;
  SummaryPool& operator=(const SummaryPool&) = delete;

  // Past max_waiting a summary is dropped (result="dropped"): its lease ends, and a later call
  // of the conversation starts it again.
  void submit(Task task);

  // Describes the metric (once, at start).
  static void describe(Metrics& metrics);

 private:
  void work();
  void run(const Task& task);

  Metrics& metrics_;
  std::function<void(const std::string&)> await_vouch_;
  std::size_t max_waiting_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> waiting_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace compactor::serve
