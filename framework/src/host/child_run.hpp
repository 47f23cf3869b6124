// Runs work that calls plugin code in a forked child process, so that a stage that crashes
// (abort, segfault, stack overflow), hangs, or ends the process (exit(0)) cannot take the caller
// down, make it exit 0 with nothing written, or leave temporary files behind. The child tells
// the parent which stage it is running; the parent stops a stage that runs past its time limit,
// reports which stage and plugin failed, and removes the child's temporary archive files.
//
// `compactor run` forks once per run, after its input is read and its config loaded, so the
// parent holds nothing the child may change; the child runs the pipeline and writes the outputs
// itself. Cost: one fork and wait per run (README, "A plugin cannot take the host down").
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace compactor {

// What the child reports while it works; each call is one short write to the parent.
class ChildProgress {
 public:
  explicit ChildProgress(int fd) : fd_(fd) {}
  void stage_started(std::string_view stage, std::string_view plugin_file);
  void stage_finished();

 private:
  int fd_;
};

struct ChildRunOutcome {
  int exit_code = 0;      // the child's, or 3 when it failed
  bool failed = false;    // the child crashed, ended early or was stopped
  std::string error;      // then: one line naming the stage and plugin, and what happened
};

// Forks; the child runs `work` and exits with what it returns (stdio flushed, no destructors or
// atexit handlers of the parent's objects run). `archive_dir`: where the child's temporary blobs
// (`*.tmp.<pid>.*`) are removed from when it fails.
ChildRunOutcome run_in_child(const std::function<int(ChildProgress&)>& work, std::chrono::milliseconds stage_timeout,
                             const std::string& archive_dir);

}  // namespace compactor
