#include "serve/pipeline_queue.hpp"

#include <spdlog/spdlog.h>

#include <signal.h>

namespace compactor::serve {

PipelineQueue::PipelineQueue(std::size_t workers, std::size_t max_waiting) : workers_(workers), max_waiting_(max_waiting) {
  set_limits(workers, max_waiting);
}

PipelineQueue::~PipelineQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

PipelineQueue::Place::~Place() {
  std::lock_guard lock(queue_.mutex_);
  if (held_) --queue_.reserved_;
}

std::shared_ptr<PipelineQueue::Place> PipelineQueue::reserve() {
  std::lock_guard lock(mutex_);
  if (waiting_.size() + reserved_ >= max_waiting_) return nullptr;
  ++reserved_;
  return std::make_shared<Place>(*this);
}

void PipelineQueue::submit(std::shared_ptr<QueuedJob> job, std::shared_ptr<Place> place) {
  {
    std::lock_guard lock(mutex_);
    waiting_.push_back(std::move(job));
    // The job takes the place's count over: it leaves with the job.
    if (place && place->held_) {
      place->held_ = false;
      --reserved_;
    }
  }
  wake_.notify_one();
}

bool PipelineQueue::withdraw(const std::shared_ptr<QueuedJob>& job) {
  std::lock_guard lock(mutex_);
  if (!job->claim()) return false;
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
    if (*it == job) {
      waiting_.erase(it);
      break;
    }
  return true;
}

// One thread per pipeline that may run at once; a reload that lowers the limit leaves the extra
// threads waiting.
void PipelineQueue::set_limits(std::size_t workers, std::size_t max_waiting) {
  std::lock_guard lock(mutex_);
  workers_ = workers;
  max_waiting_ = max_waiting;
  while (threads_.size() < workers_) threads_.emplace_back([this] { work(); });
  wake_.notify_all();
}

std::size_t PipelineQueue::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_.size();
}

std::size_t PipelineQueue::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

void PipelineQueue::work() {
  // Signals belong to the server's main thread.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || (!waiting_.empty() && running_ < workers_); });
    if (stopping_) return;
    auto job = std::move(waiting_.front());
    waiting_.pop_front();
    if (!job->claim()) continue;  // its owner gave up waiting
    ++running_;
    lock.unlock();
    // The job fails open on its own failures; what still escapes must not end this thread (and
    // with it the process).
    try {
      job->run();
    } catch (const std::exception& e) {
      spdlog::error("serve: a pipeline job failed outside its own handling: {}", e.what());
    }
    job.reset();
    lock.lock();
    --running_;
    wake_.notify_one();
  }
}

}  // namespace compactor::serve
