// Where requests wait for a pipeline. At most `workers` compactions run at once (each in a worker
// process of the zygote; a thread here only waits for it), in arrival order. A request that
// waits longer than its deadline is given up by its owner (forwarded as it came), and the queue
// holds at most `max_waiting`: past that a request is refused before its body is read. Open
// connections and streams cost no place here: only pipelines are limited.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace compactor::serve {

// One request's place in the queue. Whoever claims it first runs it: a queue thread (the
// compaction), or its owner when the deadline passes (fail open).
struct QueuedJob {
  std::atomic<bool> claimed{false};
  std::function<void()> run;  // on a queue thread; may block on the worker process
  bool claim() { return !claimed.exchange(true); }
};

class PipelineQueue {
 public:
  PipelineQueue(std::size_t workers, std::size_t max_waiting);
  ~PipelineQueue();
  PipelineQueue(const PipelineQueue&) = delete;
  PipelineQueue& operator=(const PipelineQueue&) = delete;

  // False when max_waiting requests already wait (the caller refuses, 529 with Retry-After).
  bool has_room() const;
  void submit(std::shared_ptr<QueuedJob> job);
  // A reload's new limits; running compactions finish where they are.
  void set_limits(std::size_t workers, std::size_t max_waiting);
  std::size_t waiting() const;
  std::size_t running() const;

 private:
  void work();
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<QueuedJob>> waiting_;
  std::vector<std::thread> threads_;
  std::size_t workers_, max_waiting_, running_ = 0;
  bool stopping_ = false;
};

}  // namespace compactor::serve
