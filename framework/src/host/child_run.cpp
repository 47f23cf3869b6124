#include "host/child_run.hpp"

#include "archive/archive_store.hpp"

#include <fmt/core.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace compactor {
namespace {

using Clock = std::chrono::steady_clock;

// Lines up to PIPE_BUF are written atomically; names are clipped to stay well under it.
void send(int fd, std::string line) {
  if (line.size() > 1000) line.resize(1000);
  line += '\n';
  std::string_view rest = line;
  while (!rest.empty()) {
    ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone; nothing to tell
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return fmt::format("signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  return "an unknown status";
}

}  // namespace

void ChildProgress::stage_started(std::string_view stage, std::string_view plugin_file) {
  send(fd_, fmt::format("S {}\t{}", stage, plugin_file));
}

void ChildProgress::stage_finished() { send(fd_, "E"); }

ChildRunOutcome run_in_child(const std::function<int(ChildProgress&)>& work, std::chrono::milliseconds stage_timeout,
                             const std::string& archive_dir) {
  ChildRunOutcome outcome;
  int fds[2];
  if (::pipe(fds) != 0) {
    outcome.failed = true;
    outcome.exit_code = 3;
    outcome.error = std::string("cannot create a pipe for the pipeline's process: ") + std::strerror(errno);
    return outcome;
  }
  std::fflush(nullptr);  // nothing buffered may be written twice
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    outcome.failed = true;
    outcome.exit_code = 3;
    outcome.error = std::string("cannot start the pipeline's process: ") + std::strerror(errno);
    return outcome;
  }
  if (pid == 0) {
    ::close(fds[0]);
    ChildProgress progress(fds[1]);
    int code = work(progress);
    std::fflush(nullptr);
    send(fds[1], fmt::format("D {}", code));
    ::_exit(code);
  }
  ::close(fds[1]);

  std::string buffer, stage, plugin;
  bool in_stage = false, done = false;
  auto stage_deadline = Clock::now();
  auto blame = [&] {
    return in_stage ? fmt::format("stage {} (plugin {})", stage, plugin) : std::string("the pipeline's process");
  };
  for (;;) {
    int timeout = -1;
    if (in_stage) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(stage_deadline - Clock::now()).count();
      timeout = static_cast<int>(std::max<long long>(0, std::min<long long>(left, 1 << 30)));
    }
    pollfd p{fds[0], POLLIN, 0};
    int ready = ::poll(&p, 1, timeout);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {  // the running stage is past its limit
      ::kill(pid, SIGKILL);
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      ::close(fds[0]);
      remove_temp_blobs_of(archive_dir, pid);
      outcome.failed = true;
      outcome.exit_code = 3;
      outcome.error = fmt::format("{} ran past limits.stage_timeout_ms ({} ms) and was stopped; nothing was written",
                                  blame(), stage_timeout.count());
      return outcome;
    }
    char chunk[4096];
    ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed its end: it has ended
    buffer.append(chunk, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = buffer.find('\n')) != std::string::npos; buffer.erase(0, nl + 1)) {
      std::string_view line(buffer.data(), nl);
      if (line.substr(0, 2) == "S ") {
        std::string_view rest = line.substr(2);
        std::size_t tab = rest.find('\t');
        stage = std::string(rest.substr(0, tab));
        plugin = tab == std::string_view::npos ? "" : std::string(rest.substr(tab + 1));
        in_stage = true;
        stage_deadline = Clock::now() + stage_timeout;
      } else if (line == "E") {
        in_stage = false;
      } else if (line.substr(0, 2) == "D ") {
        done = true;
      }
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (done && WIFEXITED(status)) {
    outcome.exit_code = WEXITSTATUS(status);
    return outcome;
  }
  remove_temp_blobs_of(archive_dir, pid);
  outcome.failed = true;
  outcome.exit_code = 3;
  outcome.error = fmt::format("{} ended the process with {}{}; nothing was written", blame(), describe_status(status),
                              in_stage ? "" : " outside any stage");
  return outcome;
}

}  // namespace compactor
