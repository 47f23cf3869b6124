// Zygote: the server's handle on its zygote, the process (serve/zygote_main.hpp) it starts with
// posix_spawn and through which each request's compaction runs in a worker of its own, at most
// `serve.workers` at once. The server process itself never forks and never loads plugin code.
//
// A worker that crashes, aborts, is killed or passes its time limit fails its request (open, or
// rejected under `on_failure: reject`) with one line naming the stage and plugin it was in, and
// leaves no temporary archive file; the next request gets a new worker.
#pragma once

#include "serve/job_protocol.hpp"

#include "host/call_triage.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace compactor::serve {

struct JobRun {
  JobOutcome outcome;
  std::string body;  // the body to forward, when outcome.result is compacted
  std::int64_t queue_us = 0;  // how long it waited for a pipeline (set by the server's queue)
  // Which path the call took: "fast" (no stage could act: the server forwarded it without a
  // worker) or "worker"; and why a worker ran (host/call_triage.hpp's reason).
  std::string path = "worker", why;
};

class Zygote {
 public:
  // Starts a zygote for `config_file` and waits (up to `load_timeout`) for it to load the config
  // and its plugins. Fails with the config's problems, one line each, and the exit code they
  // call for (2 bad config, 3 a plugin failed).
  struct StartFailure {
    std::vector<std::string> errors;
    int exit_code = 3;
  };
  static std::shared_ptr<Zygote> start(const std::string& config_file, std::chrono::milliseconds load_timeout,
                                       StartFailure& failure);

  // Closes the control socket: the zygote lets its running workers finish, then exits.
  ~Zygote();
  Zygote(const Zygote&) = delete;
  Zygote& operator=(const Zygote&) = delete;

  // Runs one request's compaction (or a background summary: Job::summary_key) in a new worker,
  // waiting at most `request_timeout` in all and the config's `limits.stage_timeout_ms` per stage;
  // `cancel`, when given and set, stops the worker (serve is stopping).
  JobRun run(const Job& job, const std::string& body, std::chrono::milliseconds request_timeout,
             const std::atomic<bool>* cancel = nullptr);

  // False once the zygote process has ended (then it must be replaced).
  bool alive() const;

  int pid() const { return pid_; }
  const std::string& archive_dir() const { return archive_dir_; }
  const std::string& unit() const { return unit_; }
  // The first 12 hex digits of the SHA-256 of the config as the zygote resolved it (what
  // `compactor print-pipeline` prints): equal for two replicas that run the same config.
  const std::string& config_hash() const { return config_hash_; }
  // What the loaded stages act on (host/call_triage.hpp); null: every call needs a worker.
  const std::shared_ptr<const CallTriage>& triage() const { return triage_; }
  // summarizer.background_timeout_s: a background summary's time limit.
  std::chrono::milliseconds background_timeout() const { return background_timeout_; }

 private:
  Zygote() = default;
  int pid_ = -1;
  int pidfd_ = -1;    // the zygote's, to see it end
  int control_ = -1;  // the server's end of the control socket
  std::mutex send_mutex_;
  std::string archive_dir_, unit_, config_hash_;
  std::chrono::milliseconds stage_timeout_{600000};
  std::shared_ptr<const CallTriage> triage_;
  std::chrono::milliseconds background_timeout_{300000};
};

// Ignores SIGCHLD in the server so that ended zygotes are reaped by the kernel; called once at
// start, before any thread.
void reap_children_automatically();

}  // namespace compactor::serve
