#include "serve/worker_slots.hpp"

namespace compactor::serve {

void WorkerSlots::acquire() {
  std::unique_lock lock(mutex_);
  const std::uint64_t ticket = next_ticket_++;
  freed_.wait(lock, [&] { return ticket == serving_ && busy_ < limit_; });
  ++busy_;
  ++serving_;
  freed_.notify_all();  // the next ticket may take a slot too
}

void WorkerSlots::release() {
  std::lock_guard lock(mutex_);
  --busy_;
  freed_.notify_all();
}

void WorkerSlots::set_limit(std::size_t limit) {
  std::lock_guard lock(mutex_);
  limit_ = limit;
  freed_.notify_all();
}

}  // namespace compactor::serve
