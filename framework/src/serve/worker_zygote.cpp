#include "serve/worker_zygote.hpp"

#include "serve/compaction_job.hpp"
#include "serve/continuity_store.hpp"
#include "serve/job_protocol.hpp"

#include "host/exit_code.hpp"
#include "host/pipeline.hpp"
#include "host/pipeline_config.hpp"
#include "host/stderr_logger.hpp"
#include "model/json_scanner.hpp"
#include "wire/wire_format.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <map>

namespace compactor::serve {
namespace {

namespace json = boost::json;

int pidfd_of_self() { return static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)); }

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

// One worker: the job's request body is in `body_fd`; answers on `reply`; never returns.
[[noreturn]] void work(Pipeline& pipeline, const ContinuityStore& store, const Job& job, int body_fd, int reply) {
  int pidfd = pidfd_of_self();
  std::vector<int> fds;
  if (pidfd >= 0) fds.push_back(pidfd);
  send_message(reply, fmt::format("P {}", ::getpid()), fds);
  if (pidfd >= 0) ::close(pidfd);

  std::string body = read_whole(body_fd);
  ::close(body_fd);
  CompactionResult result;
  if (const wire::WireFormat* format = wire::wire_format_named(job.wire)) {
    ChildProgress progress(reply);
    auto log = make_stderr_logger("serve: ");
    result = run_compaction(pipeline, store, *format, std::move(body), job.prompt_too_long, &progress, *log);
  } else {
    result.outcome.warning = "pipeline failed, forwarded unchanged: no wire format named " + job.wire;
  }
  std::vector<int> out;
  if (!result.body.empty()) {
    int fd = memfd_with("compactor-forward", result.body);
    if (fd >= 0) out.push_back(fd);
    else {
      result.outcome.result = JobOutcome::failed;
      result.outcome.warning = std::string("pipeline failed, forwarded unchanged: cannot create a memfd: ") + std::strerror(errno);
    }
  }
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  result.outcome.peak_rss_kb = usage.ru_maxrss;
  std::fflush(nullptr);
  send_message(reply, "R " + json::serialize(result.outcome.to_json()), out);
  ::_exit(0);
}

// Threads of this process, from /proc (1 for a process that never started one).
int thread_count() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  int threads = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, "Threads:", 8) == 0) threads = std::atoi(line + 8);
  std::fclose(f);
  return threads;
}

std::optional<Job> parse_job(std::string_view text) {
  boost::system::error_code ec;
  json::value v = detail::parse_json(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const json::object& o = v.get_object();
  const json::value* wire = o.if_contains("wire");
  const json::value* ptl = o.if_contains("prompt_too_long");
  if (wire == nullptr || !wire->is_string() || ptl == nullptr || !ptl->is_bool()) return std::nullopt;
  return Job{std::string(wire->get_string()), ptl->get_bool()};
}

}  // namespace

int zygote_main(const std::string& config_file, int control_fd, int parent) {
  // Dies with the server; a server already gone (before the call) is caught by the check after it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return kExitPluginError;
  ::fcntl(control_fd, F_SETFD, FD_CLOEXEC);

  auto loaded = load_pipeline_config(config_file);
  std::optional<Pipeline> pipeline;
  json::object ready;
  if (loaded.config) {
    auto built = Pipeline::build(std::move(*loaded.config));
    if (built) pipeline.emplace(std::move(*built));
    else loaded.errors.push_back(built.error().message), loaded.plugin_failure = true;
  }
  // Forking is safe only from a process with one thread: a plugin that starts one while loading
  // is refused here rather than risk a worker that inherits a lock no thread will release.
  if (pipeline) {
    if (int threads = thread_count(); threads != 1) {
      loaded.errors.push_back(fmt::format("{}: the loaded plugins started {} threads; serve forks its workers from a "
                                          "single-threaded process and cannot run this pipeline",
                                          config_file, threads - 1));
      loaded.plugin_failure = true;
      pipeline.reset();
    }
  }
  if (!pipeline) {
    json::array errors;
    for (const auto& e : loaded.errors) errors.push_back(json::string(e));
    ready = {{"ready", false}, {"exit", loaded.plugin_failure ? kExitPluginError : kExitBadInput}, {"errors", std::move(errors)}};
    send_message(control_fd, json::serialize(ready));
    return kExitBadInput;
  }
  const PipelineConfig& config = pipeline->config();
  ready = {{"ready", true},
           {"archive_dir", config.archive_dir},
           {"unit", to_string(config.budget.unit)},
           {"stage_timeout_ms", config.stage_timeout_ms}};
  if (!send_message(control_fd, json::serialize(ready))) return kExitOk;
  const ContinuityStore store(continuity_dir(config.archive_dir));

  // Workers are reaped as they end, through a signalfd, and the job's socket then hears how a
  // worker that did not answer ended.
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  int child_fd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  std::map<pid_t, int> replies;  // each running worker's job socket (the zygote's copy)
  auto reap = [&] {
    signalfd_siginfo info;
    while (::read(child_fd, &info, sizeof info) > 0) {}
    int status = 0;
    for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
      auto it = replies.find(pid);
      if (it == replies.end()) continue;
      send_message(it->second, "X " + describe_status(status));
      ::close(it->second);
      replies.erase(it);
    }
  };
  bool open = true;
  while (open || !replies.empty()) {
    pollfd p[2] = {{child_fd, POLLIN, 0}, {open ? control_fd : -1, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[0].revents != 0) reap();
    if (!open || p[1].revents == 0) continue;
    auto received = receive_message(control_fd, 0);
    if (!received) continue;
    if (received->closed) {
      open = false;
      continue;
    }
    auto job = parse_job(received->text);
    if (!job || received->fds.size() != 2) {
      for (int fd : received->fds) ::close(fd);
      continue;
    }
    const int body_fd = received->fds[0], reply = received->fds[1];
    std::fflush(nullptr);
    const pid_t zygote = ::getpid();
    pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != zygote) ::_exit(1);
      // Nothing of the zygote's or of other jobs is the worker's.
      ::close(control_fd);
      ::close(child_fd);
      for (const auto& [other, fd] : replies) ::close(fd);
      ::sigprocmask(SIG_UNBLOCK, &chld, nullptr);
      work(*pipeline, store, *job, body_fd, reply);
    }
    ::close(body_fd);
    if (pid < 0) {
      send_message(reply, std::string("X could not be started: ") + std::strerror(errno));
      ::close(reply);
      continue;
    }
    replies.emplace(pid, reply);
  }
  ::close(control_fd);
  return kExitOk;
}

}  // namespace compactor::serve
