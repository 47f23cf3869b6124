#include "serve/zygote.hpp"

#include "store/store.hpp"

#include "archive/archive_store.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace compactor::serve {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

JobRun failed(std::string warning) {
  JobRun run;
  run.outcome.result = JobOutcome::failed;
  run.outcome.warning = "pipeline failed, forwarded unchanged: " + warning;
  return run;
}

}  // namespace

void reap_children_automatically() { ::signal(SIGCHLD, SIG_IGN); }

std::shared_ptr<Zygote> Zygote::start(const std::string& config_file, std::chrono::milliseconds load_timeout,
                                      StartFailure& failure) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    failure.errors.push_back(std::string("compactor serve: cannot create the workers' socket: ") + std::strerror(errno));
    return nullptr;
  }
  // The zygote gets the control socket as fd 3, stderr as its stdout (the server's stdout is its
  // lifecycle lines), nothing else, default signal handling and no blocked signal.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGHUP, SIGTERM, SIGINT, SIGPIPE, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const std::string parent = std::to_string(::getpid());
  std::vector<std::string> args = {"compactor", "serve-worker", "--config", config_file, "--parent", parent};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, "/proc/self/exe", &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    failure.errors.push_back(std::string("compactor serve: cannot start the pipeline's zygote: ") + std::strerror(rc));
    return nullptr;
  }
  std::shared_ptr<Zygote> z(new Zygote());
  z->pid_ = pid;
  z->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  z->control_ = sv[0];
  auto ready = receive_message(z->control_, static_cast<int>(load_timeout.count()));
  boost::system::error_code ec;
  json::value v = ready && !ready->closed ? detail::parse_json(ready->text, ec) : json::value();
  const json::object* o = v.if_object();
  if (o == nullptr || !o->contains("ready")) {
    failure.errors.push_back(ready ? "compactor serve: the pipeline's zygote ended while loading the config"
                                   : "compactor serve: the pipeline's zygote did not load the config in time");
    ::kill(pid, SIGKILL);
    return nullptr;
  }
  if (!o->at("ready").as_bool()) {
    for (const auto& e : o->at("errors").as_array()) failure.errors.emplace_back(e.as_string());
    failure.exit_code = static_cast<int>(o->at("exit").to_number<std::int64_t>());
    return nullptr;
  }
  z->archive_dir_ = std::string(o->at("archive_dir").as_string());
  z->unit_ = std::string(o->at("unit").as_string());
  z->config_hash_ = std::string(o->at("config_hash").as_string());
  z->stage_timeout_ = std::chrono::milliseconds(o->at("stage_timeout_ms").to_number<std::int64_t>());
  // A triage that does not read back sends every call to a worker, as before there was one.
  if (const json::value* t = o->if_contains("triage"))
    if (auto triage = CallTriage::from_json(*t)) z->triage_ = std::make_shared<const CallTriage>(std::move(*triage));
  z->background_timeout_ = std::chrono::milliseconds(o->at("background_timeout_ms").to_number<std::int64_t>());
  return z;
}

Zygote::~Zygote() {
  if (control_ >= 0) ::close(control_);
  if (pidfd_ >= 0) ::close(pidfd_);
}

bool Zygote::alive() const {
  if (pidfd_ < 0) return ::kill(pid_, 0) == 0;
  pollfd p{pidfd_, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

JobRun Zygote::run(const Job& job, const std::string& body, std::chrono::milliseconds request_timeout, const std::atomic<bool>* cancel) {
  const auto deadline = Clock::now() + request_timeout;
  int memfd = memfd_with("compactor-request", body);
  if (memfd < 0) return failed(std::string("cannot create a memfd: ") + std::strerror(errno));
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    ::close(memfd);
    return failed(std::string("cannot create a socket for the worker: ") + std::strerror(errno));
  }
  const std::string header = json::serialize(json::object{{"wire", job.wire}, {"prompt_too_long", job.prompt_too_long}, {"tenant", job.tenant}, {"model", job.model}, {"summary", job.summary_key}});
  bool sent;
  {
    std::lock_guard lock(send_mutex_);
    sent = send_message(control_, header, {memfd, sv[1]});
  }
  ::close(memfd);
  ::close(sv[1]);
  const int reply = sv[0];
  if (!sent) {
    ::close(reply);
    return failed("the pipeline's zygote is not running");
  }

  JobRun run;
  int worker = -1, worker_pidfd = -1;
  std::string stage, plugin;
  bool in_stage = false, answered = false;
  auto stage_deadline = deadline;
  auto blame = [&] {
    return in_stage ? fmt::format("stage {} (plugin {})", stage, plugin) : std::string("the pipeline's worker");
  };
  // Killed, and waited for (its pidfd turns readable when it has ended), so that no temporary
  // file it was writing appears after the clean-up below.
  auto stop_worker = [&] {
    if (worker_pidfd < 0) return;
    ::syscall(SYS_pidfd_send_signal, worker_pidfd, SIGKILL, nullptr, 0);
    pollfd p{worker_pidfd, POLLIN, 0};
    ::poll(&p, 1, 5000);
  };
  while (!answered) {
    auto until = in_stage ? std::min(stage_deadline, deadline) : deadline;
    // A job that may be cancelled looks at its flag every 100 ms.
    auto message = receive_message(reply, cancel != nullptr ? std::min(ms_until(until), 100) : ms_until(until));
    if (!message && cancel != nullptr && !cancel->load() && Clock::now() < until) continue;
    if (!message && cancel != nullptr && cancel->load()) {
      stop_worker();
      run = failed("serve is stopping");
      break;
    }
    if (!message) {
      stop_worker();
      bool stage_limit = in_stage && stage_deadline <= deadline;
      run = failed(stage_limit ? fmt::format("{} ran past limits.stage_timeout_ms ({} ms) and was stopped", blame(),
                                             stage_timeout_.count())
                               : fmt::format("{} ran past {} ({} ms) and was stopped", blame(),
                                             job.summary_key.empty() ? "serve.request_timeout_ms" : "summarizer.background_timeout_s",
                                             request_timeout.count()));
      break;
    }
    if (message->closed) {
      run = failed(fmt::format("{} ended the worker without an answer", blame()));
      break;
    }
    const std::string& text = message->text;
    if (text.starts_with("P ")) {
      worker = std::atoi(text.c_str() + 2);
      if (!message->fds.empty()) worker_pidfd = message->fds[0];
    } else if (text.starts_with("S ")) {
      std::string_view rest = std::string_view(text).substr(2);
      if (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
      std::size_t tab = rest.find('\t');
      stage = std::string(rest.substr(0, tab));
      plugin = tab == std::string_view::npos ? "" : std::string(rest.substr(tab + 1));
      in_stage = true;
      stage_deadline = Clock::now() + stage_timeout_;
    } else if (text.starts_with("E")) {
      in_stage = false;
    } else if (text.starts_with("X ")) {  // the zygote: the worker ended before it answered
      run = failed(fmt::format("{}: the worker {}", blame(), std::string_view(text).substr(2)));
      break;
    } else if (text.starts_with("R ")) {
      auto outcome = JobOutcome::from_json(std::string_view(text).substr(2));
      if (!outcome) {
        run = failed("the worker's answer could not be read");
      } else {
        run.outcome = std::move(*outcome);
        if (!message->fds.empty()) run.body = read_whole(message->fds[0]);
      }
      answered = true;
    }
    for (std::size_t i = text.starts_with("P ") ? 1 : 0; i < message->fds.size(); ++i) ::close(message->fds[i]);
  }
  ::close(reply);
  if (worker_pidfd >= 0) ::close(worker_pidfd);
  // A worker that did not answer may have left temporary archive files behind.
  if (!answered && worker > 0) {
    remove_temp_blobs_of(archive_dir_, worker);
    store::remove_spools_of(worker);
  }
  return run;
}

}  // namespace compactor::serve
