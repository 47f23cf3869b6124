// Where requests wait for a pipeline. At most `workers` compactions run at once (each in a worker
// process of the zygote; a thread here only waits for it), in arrival order. A request that
// waits longer than its deadline, or whose client left, is withdrawn by its owner and leaves the
// queue at once (with its body). The queue holds at most `max_waiting`, counting the places
// taken by heads whose bodies are still arriving: a place is reserved from the head, atomically,
// so heads that arrive together cannot all pass, and past it a request is refused before its
// body is read. Open connections and streams cost no place here: only pipelines are limited.
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
  // A place reserved from a request's head: it counts against max_waiting until its job is
  // submitted (the job holds it then, until claimed or withdrawn) or it is let go of (the request
  // ended before it became a job). The queue must outlive its places.
  class Place {
   public:
    explicit Place(PipelineQueue& queue) : queue_(queue) {}
    ~Place();
    Place(const Place&) = delete;
    Place& operator=(const Place&) = delete;

   private:
    friend class PipelineQueue;
    PipelineQueue& queue_;
    bool held_ = true;
  };

  PipelineQueue(std::size_t workers, std::size_t max_waiting);
  ~PipelineQueue();
  PipelineQueue(const PipelineQueue&) = delete;
  PipelineQueue& operator=(const PipelineQueue&) = delete;

  // A place for a request that may need a pipeline, or null when max_waiting are taken (the
  // caller refuses, 529 with Retry-After).
  std::shared_ptr<Place> reserve();
  // Queues a job in its place (a retry after a context refusal has none, and is let in).
  void submit(std::shared_ptr<QueuedJob> job, std::shared_ptr<Place> place = nullptr);
  // The owner gives a waiting job up (its deadline passed, its client left): claimed and out of
  // the queue now. False when a queue thread claimed it first (it runs, or ran).
  bool withdraw(const std::shared_ptr<QueuedJob>& job);
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
  std::size_t workers_, max_waiting_, running_ = 0, reserved_ = 0;
  bool stopping_ = false;
};

}  // namespace compactor::serve
