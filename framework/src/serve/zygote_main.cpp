#include "serve/zygote_main.hpp"

#include "serve/background_summary.hpp"
#include "serve/compaction_job.hpp"
#include "store/store.hpp"
#include "serve/job_protocol.hpp"
#include "serve/tenant.hpp"

#include "host/call_triage.hpp"
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
[[noreturn]] void work(Pipeline& pipeline, const Job& job, int body_fd, int reply) {
  int pidfd = pidfd_of_self();
  std::vector<int> fds;
  if (pidfd >= 0) fds.push_back(pidfd);
  send_message(reply, fmt::format("P {}", ::getpid()), fds);
  if (pidfd >= 0) ::close(pidfd);

  std::string body = read_whole(body_fd);
  ::close(body_fd);
  CompactionResult result;
  const PipelineConfig& config = pipeline.config();
  // The tenant's store, opened here, after the fork: a connection is never shared with the zygote.
  std::unique_ptr<store::Store> store = open_tenant_store(config, job.tenant);
  const wire::WireFormat* format = wire::wire_format_named(job.wire);
  if (!job.tenant.empty() && !is_tenant_id(job.tenant)) {
    result.outcome.warning = "pipeline failed, forwarded unchanged: \"" + job.tenant + "\" is not a tenant id";
  } else if (!job.summary_key.empty()) {
    auto log = make_stderr_logger(fmt::format("serve: tenant={}: ", tenant_name(job.tenant)));
    result.outcome = run_summary_job(pipeline, *store, job.summary_key, *log);
    report_store(result.outcome, *store, config.store.kind == StoreConfig::Kind::redis ? "redis" : "folder");
  } else if (format != nullptr) {
    ChildProgress progress(reply);
    auto log = make_stderr_logger(fmt::format("serve: tenant={}: ", tenant_name(job.tenant)));
    pipeline.archive_for_tenant(job.tenant);
    result = run_compaction(pipeline, *store, *format, std::move(body), job.prompt_too_long, &progress, *log, job.model);
    report_store(result.outcome, *store, config.store.kind == StoreConfig::Kind::redis ? "redis" : "folder");
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
  const json::value* tenant = o.if_contains("tenant");
  const json::value* model = o.if_contains("model");
  const json::value* summary = o.if_contains("summary");
  if (wire == nullptr || !wire->is_string() || ptl == nullptr || !ptl->is_bool() || (tenant != nullptr && !tenant->is_string()))
    return std::nullopt;
  if ((model != nullptr && !model->is_string()) || (summary != nullptr && !summary->is_string())) return std::nullopt;
  return Job{std::string(wire->get_string()), ptl->get_bool(), tenant != nullptr ? std::string(tenant->get_string()) : std::string(),
             model != nullptr ? std::string(model->get_string()) : std::string(),
             summary != nullptr ? std::string(summary->get_string()) : std::string()};
}

// The loaded pipeline, or why there is none (the lines the server prints, and its exit code).
struct LoadedPipeline {
  std::optional<Pipeline> pipeline;
  std::vector<std::string> errors;
  int exit_code = kExitOk;
};

LoadedPipeline load(const std::string& config_file) {
  LoadedPipeline out;
  auto loaded = load_pipeline_config(config_file);
  if (loaded.config) {
    ExitCode failure = kExitPluginError;
    auto built = Pipeline::build(std::move(*loaded.config), &failure);
    if (built) out.pipeline.emplace(std::move(*built));
    else loaded.errors.push_back(built.error().message), loaded.plugin_failure = failure == kExitPluginError;
  }
  // Forking is safe only from a process with one thread: a plugin that starts one while loading
  // is refused here rather than risk a worker that inherits a lock no thread will release.
  if (out.pipeline) {
    if (int threads = thread_count(); threads != 1) {
      loaded.errors.push_back(fmt::format("{}: the loaded plugins started {} threads; serve forks its workers from a "
                                          "single-threaded process and cannot run this pipeline",
                                          config_file, threads - 1));
      loaded.plugin_failure = true;
      out.pipeline.reset();
    }
  }
  out.errors = std::move(loaded.errors);
  out.exit_code = out.pipeline ? kExitOk : loaded.plugin_failure ? kExitPluginError : kExitBadInput;
  return out;
}

// The zygote's loop: a job from the control socket is a fork; an ended worker is reaped, and its
// job's socket hears how it ended when it did not answer.
class Zygote {
 public:
  Zygote(Pipeline& pipeline, int control) : pipeline_(pipeline), control_(control) {
    sigemptyset(&chld_);
    sigaddset(&chld_, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &chld_, nullptr);
    child_fd_ = ::signalfd(-1, &chld_, SFD_CLOEXEC | SFD_NONBLOCK);
  }

  // Until the server closes the control socket and the last worker has ended.
  void run() {
    bool open = true;
    while (open || !replies_.empty()) {
      pollfd p[2] = {{child_fd_, POLLIN, 0}, {open ? control_ : -1, POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (p[0].revents != 0) reap();
      if (open && p[1].revents != 0) open = take_job();
    }
  }

 private:
  void reap() {
    signalfd_siginfo info;
    while (::read(child_fd_, &info, sizeof info) > 0) {}
    int status = 0;
    for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
      auto it = replies_.find(pid);
      if (it == replies_.end()) continue;
      send_message(it->second, "X " + describe_status(status));
      ::close(it->second);
      replies_.erase(it);
    }
  }

  // Reads one job and forks its worker; false once the control socket is closed.
  bool take_job() {
    auto received = receive_message(control_, 0);
    if (!received) return true;
    if (received->closed) return false;
    auto job = parse_job(received->text);
    if (!job || received->fds.size() != 2) {
      for (int fd : received->fds) ::close(fd);
      return true;
    }
    const int body_fd = received->fds[0], reply = received->fds[1];
    std::fflush(nullptr);
    const pid_t zygote = ::getpid();
    pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != zygote) ::_exit(1);
      // Nothing of the zygote's or of other jobs is the worker's.
      ::close(control_);
      ::close(child_fd_);
      for (const auto& [other, fd] : replies_) ::close(fd);
      ::sigprocmask(SIG_UNBLOCK, &chld_, nullptr);
      work(pipeline_, *job, body_fd, reply);
    }
    ::close(body_fd);
    if (pid < 0) {
      send_message(reply, std::string("X could not be started: ") + std::strerror(errno));
      ::close(reply);
      return true;
    }
    replies_.emplace(pid, reply);
    return true;
  }

  Pipeline& pipeline_;
  int control_;
  sigset_t chld_;
  int child_fd_ = -1;
  std::map<pid_t, int> replies_;  // each running worker's job socket (the zygote's copy)
};

}  // namespace

int zygote_main(const std::string& config_file, int control_fd, int parent) {
  // Dies with the server; a server already gone (before the call) is caught by the check after it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return kExitPluginError;
  ::fcntl(control_fd, F_SETFD, FD_CLOEXEC);

  LoadedPipeline loaded = load(config_file);
  if (!loaded.pipeline) {
    json::array errors;
    for (const auto& e : loaded.errors) errors.push_back(json::string(e));
    send_message(control_fd, json::serialize(json::object{{"ready", false}, {"exit", loaded.exit_code}, {"errors", std::move(errors)}}));
    return kExitBadInput;
  }
  const PipelineConfig& config = loaded.pipeline->config();
  // A meter loads what it needs (ICU, its tables) at its first count: once here, not in every
  // worker (each would pay it after its fork; about 7 ms a call for o200k).
  if (config.meter) config.meter->count_text("warm");
  if (config.model_meters)
    for (const auto& [name, meter] : config.model_meters->by_name)
      if (meter) meter->count_text("warm");
  const json::object ready{{"ready", true},
                           {"archive_dir", config.archive_dir},
                           {"unit", to_string(config.budget.unit)},
                           // What replicas and reloads are compared by: the config as resolved.
                           {"config_hash", sha256_hex(print_pipeline(config)).substr(0, 12)},
                           {"stage_timeout_ms", config.stage_timeout_ms},
                           // What each stage declared it acts on: the server forwards a call none
                           // can act on without a worker, deciding with the host's code alone.
                           {"triage", CallTriage::of(config).to_json()},
                           {"background_timeout_ms", config.background_timeout_s * 1000}};
  if (!send_message(control_fd, json::serialize(ready))) return kExitOk;
  Zygote(*loaded.pipeline, control_fd).run();
  ::close(control_fd);
  return kExitOk;
}

}  // namespace compactor::serve
