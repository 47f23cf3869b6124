#include "serve/summary_pool.hpp"

#include "serve/tenant.hpp"

#include <fmt/core.h>
#include <spdlog/spdlog.h>

namespace compactor::serve {

SummaryPool::SummaryPool(Metrics& metrics, std::function<void(const std::string&)> await_vouch, std::size_t threads,
                         std::size_t max_waiting)
    : metrics_(metrics), await_vouch_(std::move(await_vouch)), max_waiting_(max_waiting) {
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

SummaryPool::~SummaryPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    waiting_.clear();
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void SummaryPool::describe(Metrics& metrics) {
  metrics.describe("compactor_serve_background_summaries_total", "counter",
                   "Background model summaries by how they ended: ok, failed, timeout, dropped (queue full or serve stopping).");
  for (const char* result : {"ok", "failed", "timeout", "dropped"})
    metrics.add("compactor_serve_background_summaries_total", fmt::format("result=\"{}\"", result), 0);
}

void SummaryPool::submit(Task task) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_ && waiting_.size() < max_waiting_) {
      waiting_.push_back(std::move(task));
      wake_.notify_one();
      return;
    }
  }
  metrics_.add("compactor_serve_background_summaries_total", "result=\"dropped\"");
  spdlog::warn("serve: tenant={}: background summary {} dropped: {} are waiting already; the conversation's next call starts it again",
               tenant_name(task.tenant), task.key, max_waiting_);
}

void SummaryPool::work() {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !waiting_.empty(); });
      if (stopping_) return;
      task = std::move(waiting_.front());
      waiting_.pop_front();
    }
    try {
      run(task);
    } catch (const std::exception& e) {  // contained: the summary is given up, serve goes on
      metrics_.add("compactor_serve_background_summaries_total", "result=\"failed\"");
      spdlog::warn("serve: tenant={}: background summary {} failed: {}", tenant_name(task.tenant), task.key, e.what());
    }
  }
}

void SummaryPool::run(const Task& task) {
  if (await_vouch_) await_vouch_(task.tenant);
  const std::chrono::milliseconds limit = task.deployment->zygote->background_timeout();
  JobRun run = task.deployment->zygote->run(Job{"", false, task.tenant, "", task.key}, "", limit, &stopping_);
  const bool ok = run.outcome.result == JobOutcome::compacted;
  const bool late = !ok && run.outcome.warning.find("ran past") != std::string::npos;
  const char* result = ok ? "ok" : late ? "timeout" : stopping_ ? "dropped" : "failed";
  metrics_.add("compactor_serve_background_summaries_total", fmt::format("result=\"{}\"", result));
  if (ok) {
    spdlog::info("serve: tenant={}: background summary {} written", tenant_name(task.tenant), task.key);
  } else if (late) {
    spdlog::warn("serve: tenant={}: background summary {} abandoned: not written within summarizer.background_timeout_s ({} s); the "
                 "extractive summary stays",
                 tenant_name(task.tenant), task.key, limit.count() / 1000);
  } else {
    spdlog::warn("serve: tenant={}: background summary {} abandoned: {}; the extractive summary stays", tenant_name(task.tenant),
                 task.key, run.outcome.warning);
  }
}

}  // namespace compactor::serve
