// At most N pipelines at once (serve.workers): a request waits here for a slot, in arrival
// order, while the requests past serve.max_concurrency are turned away before they get this far.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace compactor::serve {

class WorkerSlots {
 public:
  explicit WorkerSlots(std::size_t limit) : limit_(limit) {}
  // Blocks until a slot is free; the ticket order keeps waiting requests first come, first served.
  void acquire();
  void release();
  // A reload may change the limit; running pipelines finish where they are.
  void set_limit(std::size_t limit);

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  std::size_t limit_, busy_ = 0;
  std::uint64_t next_ticket_ = 0, serving_ = 0;
};

// A slot held for a scope.
class WorkerSlot {
 public:
  explicit WorkerSlot(WorkerSlots& slots) : slots_(slots) { slots_.acquire(); }
  ~WorkerSlot() { slots_.release(); }
  WorkerSlot(const WorkerSlot&) = delete;
  WorkerSlot& operator=(const WorkerSlot&) = delete;

 private:
  WorkerSlots& slots_;
};

}  // namespace compactor::serve
