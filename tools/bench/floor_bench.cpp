// The yardstick for a run's cost: a whole `compactor run` of the default pipeline at a 400,000-char
// budget (configs/bench-400k.yaml) against the floor, plain Boost.JSON read + parse + serialize +
// write + fsync of the same file, on seeded generated sessions (the test tool
// compactor_generate_session) of about 4.9, 14 and 56 MB. Each iteration times the floor and the
// run back to back (paired rounds); the reported time is the run's, and the counters give the
// floor's median, the run's median and the median of the per-round ratios run/floor. The run is
// the real CLI process (start, dynamic linking, config, plugins, read, the pipeline child, write,
// archive syncs): what a caller pays.
// COMPACTOR_BENCH_CLI names another `compactor` binary to run. COMPACTOR_BENCH_BASELINE_CLI names a
// second one (an older build) that each round also runs, right after the first, on the same
// session (with COMPACTOR_BENCH_BASELINE_CONFIG, its own tree's config, when given): the counters
// then give the baseline's median and the median of the per-round ratios run/baseline, the
// before-and-after figure of one run.
//
// BM_PerCall splits one call on a ~1 MB session (COMPACTOR_BENCH_SESSION: another file) into
// what `compactor run` does in turn: start (a process that only prints its version: exec and
// dynamic linking), load (config and plugins), read (read and parse the input), stages (the
// pipeline, its checkers and the archive's writes and syncs), write (serialize, write, fsync,
// rename), and the isolation's fork of a child holding the parsed input.
#include "host/atomic_file.hpp"
#include "host/child_run.hpp"
#include "model/conversation_reader.hpp"
#include "host/pipeline.hpp"
#include "compactor/stage_logger.hpp"

#include <benchmark/benchmark.h>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

const fs::path& work_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("compactor-floor-bench-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

std::string cli() {
  const char* other = std::getenv("COMPACTOR_BENCH_CLI");
  return other != nullptr && *other != '\0' ? other : COMPACTOR_CLI;
}

std::string environment_or(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// Starts every measured process from a process forked while this one was still small. A child
// forked from here later would start as a copy of this process, floor buffers and all, and the
// kernel keeps the larger of that copy's resident set and the exec'd program's in the child's
// ru_maxrss: at 12.9 MB that made the run's peak read 4.6x its input when it is 2.5x.
class Spawner {
 public:
  struct Outcome {
    int status = 0;
    struct rusage usage {};
  };

  static Spawner& instance() {
    static Spawner spawner;
    return spawner;
  }

  Outcome run(const std::vector<std::string>& args, const fs::path& cwd) {
    std::string request = cwd.string();
    request += '\0';
    for (const auto& a : args) (request += a) += '\0';
    std::uint64_t size = request.size();
    if (!write_all(to_, &size, sizeof size) || !write_all(to_, request.data(), request.size()))
      throw std::runtime_error("the benchmark's spawner is gone");
    Outcome outcome;
    if (!read_all(from_, &outcome, sizeof outcome)) throw std::runtime_error("the benchmark's spawner is gone");
    return outcome;
  }

 private:
  Spawner() {
    int to[2], from[2];
    if (::pipe(to) != 0 || ::pipe(from) != 0) throw std::runtime_error("pipe");
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(to[1]);
      ::close(from[0]);
      serve(to[0], from[1]);
      ::_exit(0);
    }
    ::close(to[0]);
    ::close(from[1]);
    to_ = to[1];
    from_ = from[0];
  }

  // In the spawner: one request at a time until the benchmark closes its end.
  static void serve(int in, int out) {
    for (;;) {
      std::uint64_t size = 0;
      if (!read_all(in, &size, sizeof size)) return;
      std::string request(size, '\0');
      if (!read_all(in, request.data(), size)) return;
      std::vector<char*> argv;
      for (std::size_t at = 0; at < request.size(); at += std::strlen(request.data() + at) + 1)
        argv.push_back(request.data() + at);
      argv.push_back(nullptr);
      Outcome outcome;
      pid_t pid = ::fork();
      if (pid == 0) {
        if (::chdir(argv[0]) != 0) ::_exit(126);
        int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        ::dup2(null, 2);
        ::execv(argv[1], argv.data() + 1);
        ::_exit(127);
      }
      ::wait4(pid, &outcome.status, 0, &outcome.usage);
      if (!write_all(out, &outcome, sizeof outcome)) return;
    }
  }

  // All `size` bytes through `io(fd, data, left)` (::read or ::write), retrying EINTR and short
  // transfers; false at end of file or on an error.
  template <class Io>
  static bool all(int fd, char* data, std::size_t size, Io io) {
    while (size > 0) {
      ssize_t n = io(fd, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }
  static bool write_all(int fd, const void* data, std::size_t size) {
    return all(fd, static_cast<char*>(const_cast<void*>(data)), size,
               [](int f, const char* p, std::size_t n) { return ::write(f, p, n); });
  }
  static bool read_all(int fd, void* data, std::size_t size) {
    return all(fd, static_cast<char*>(data), size, [](int f, char* p, std::size_t n) { return ::read(f, p, n); });
  }

  int to_ = -1, from_ = -1;
};

// Runs argv (no shell) in `cwd` with stdout and stderr to /dev/null; the exit status, and the
// CPU seconds (user + system) of the process and the children it waited for in `cpu`, and the
// largest resident set of the process or any child it waited for (the pipeline's) in `max_rss_mb`.
int run_process(const std::vector<std::string>& args, const fs::path& cwd, double* cpu = nullptr,
                double* max_rss_mb = nullptr) {
  Spawner::Outcome outcome = Spawner::instance().run(args, cwd);
  const struct rusage& usage = outcome.usage;
  if (cpu != nullptr)
    *cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  if (max_rss_mb != nullptr) *max_rss_mb = static_cast<double>(usage.ru_maxrss) / 1e3;  // KB → MB
  const int status = outcome.status;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The generated session of `exchanges` exchanges (seed 17), made once per process.
const fs::path& session(int exchanges) {
  static std::map<int, fs::path> made;
  auto it = made.find(exchanges);
  if (it != made.end()) return it->second;
  fs::path path = work_dir() / ("session-" + std::to_string(exchanges) + ".json");
  int code = run_process({COMPACTOR_GENERATE_SESSION, "--exchanges", std::to_string(exchanges), "--seed", "17", "--output",
                          path.string()},
                         work_dir());
  if (code != 0) throw std::runtime_error("compactor_generate_session failed");
  return made.emplace(exchanges, path).first->second;
}

std::string read_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  ::fstat(fd, &st);
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return bytes;
}

void write_and_sync(const fs::path& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
}

// The floor: what any JSON-in, JSON-out tool must at least do with the file.
void floor_once(const fs::path& in, const fs::path& out) {
  std::string bytes = read_file(in);
  json::value v = json::parse(bytes);
  std::string text = json::serialize(v);
  write_and_sync(out, text);
  benchmark::DoNotOptimize(text.data());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double cpu_seconds() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

void BM_RunVsFloor(benchmark::State& state) {
  const fs::path& in = session(static_cast<int>(state.range(0)));
  const fs::path config = fs::path(COMPACTOR_CONFIGS_DIR) / "bench-400k.yaml";
  // Wall time is what a caller waits; CPU time (user + system) is what the machine spends, and
  // is the steadier figure when other work shares the cores.
  std::vector<double> floors, runs, ratios, floor_cpus, run_cpus, cpu_ratios, rss;
  const std::string baseline = environment_or("COMPACTOR_BENCH_BASELINE_CLI", "");
  const std::string baseline_config = environment_or("COMPACTOR_BENCH_BASELINE_CONFIG", config.string());
  std::vector<double> baselines, baseline_ratios, baseline_cpu_ratios;
  int round = 0;
  for (auto _ : state) {
    // Each round runs in a fresh folder, so the archive's blobs are really written.
    fs::path cwd = work_dir() / ("round-" + std::to_string(round++));
    fs::create_directories(cwd);
    double c0 = cpu_seconds();
    auto t0 = Clock::now();
    floor_once(in, cwd / "floor.json");
    double floor = seconds_since(t0), floor_cpu = cpu_seconds() - c0;
    // The baseline runs in the same round, before the run in every other round, so that neither
    // build always finds the other's pages in the cache.
    double base = 0, base_cpu = 0;
    auto run_baseline = [&] {
      auto t2 = Clock::now();
      const int c = run_process({baseline, "run", "--config", baseline_config, "--input", in.string(), "--output",
                                 (cwd / "baseline.json").string()},
                                cwd, &base_cpu);
      base = seconds_since(t2);
      return c <= 1;
    };
    if (!baseline.empty() && round % 2 == 0 && !run_baseline()) {
      state.SkipWithError("the baseline's compactor run failed");
      break;
    }
    double run_cpu = 0, run_rss = 0;
    auto t1 = Clock::now();
    int code = run_process({cli(), "run", "--config", config.string(), "--input", in.string(), "--output",
                            (cwd / "out.json").string()},
                           cwd, &run_cpu, &run_rss);
    double run = seconds_since(t1);
    if (code > 1) {
      state.SkipWithError("compactor run failed");
      break;
    }
    if (!baseline.empty() && round % 2 == 1 && !run_baseline()) {
      state.SkipWithError("the baseline's compactor run failed");
      break;
    }
    if (!baseline.empty()) {
      baselines.push_back(base);
      baseline_ratios.push_back(run / base);
      baseline_cpu_ratios.push_back(run_cpu / base_cpu);
    }
    state.SetIterationTime(run);
    floors.push_back(floor);
    runs.push_back(run);
    ratios.push_back(run / floor);
    floor_cpus.push_back(floor_cpu);
    run_cpus.push_back(run_cpu);
    cpu_ratios.push_back(run_cpu / floor_cpu);
    rss.push_back(run_rss);
    std::error_code ec;
    fs::remove_all(cwd, ec);
  }
  state.counters["MB"] = static_cast<double>(fs::file_size(in)) / 1e6;
  state.counters["floor_ms"] = median(floors) * 1e3;
  state.counters["run_ms"] = median(runs) * 1e3;
  state.counters["ratio"] = median(ratios);
  state.counters["floor_cpu_ms"] = median(floor_cpus) * 1e3;
  state.counters["run_cpu_ms"] = median(run_cpus) * 1e3;
  state.counters["cpu_ratio"] = median(cpu_ratios);
  // Peak memory of the run (its largest process) over the input's size.
  state.counters["peak_MB"] = median(rss);
  state.counters["peak_ratio"] = median(rss) / (static_cast<double>(fs::file_size(in)) / 1e6);
  if (!baselines.empty()) {
    state.counters["baseline_ms"] = median(baselines) * 1e3;
    state.counters["vs_baseline"] = median(baseline_ratios);
    state.counters["cpu_vs_baseline"] = median(baseline_cpu_ratios);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * fs::file_size(in)));
}
// Exchanges giving sessions of 3.76, 12.9 and 57.0 MB with seed 17.
BENCHMARK(BM_RunVsFloor)
    ->ArgName("exchanges")
    ->Arg(128)
    ->Arg(455)
    ->Arg(1850)
    ->UseManualTime()
    ->MinTime(3)
    ->Unit(benchmark::kMillisecond);

class QuietLogger final : public compactor::StageLogger {
 public:
  void log(compactor::LogLevel, std::string_view) override {}
};

void BM_PerCall(benchmark::State& state) {
  using namespace compactor;
  const char* other = std::getenv("COMPACTOR_BENCH_SESSION");
  const fs::path in = other != nullptr && *other != '\0' ? fs::path(other) : session(static_cast<int>(state.range(0)));
  ::setenv("COMPACTOR_PLUGIN_PATH", COMPACTOR_PLUGIN_DIR, 1);
  const std::string config = (fs::path(COMPACTOR_CONFIGS_DIR) / "bench-400k.yaml").string();
  QuietLogger log;
  std::vector<double> start, load, read, stages, write, isolation, total;
  int round = 0;
  for (auto _ : state) {
    fs::path cwd = work_dir() / ("call-" + std::to_string(round++));
    fs::create_directories(cwd);
    auto t0 = Clock::now();
    run_process({cli(), "--version"}, cwd);
    auto t1 = Clock::now();
    auto loaded = load_pipeline_config(config);
    if (!loaded.config) {
      state.SkipWithError(loaded.errors.front().c_str());
      break;
    }
    auto pipeline = Pipeline::build(std::move(*loaded.config));
    if (!pipeline) {
      state.SkipWithError(pipeline.error().message.c_str());
      break;
    }
    auto t2 = Clock::now();
    auto input = read_conversation_file(in.string());
    if (!input) {
      state.SkipWithError(input.error().message.c_str());
      break;
    }
    auto t3 = Clock::now();
    RunOptions options;
    options.archive_dir = (cwd / "archive").string();
    RunReport report = pipeline->run(*input, options, log);
    if (!report.output) {
      state.SkipWithError(report.error.c_str());
      break;
    }
    auto t4 = Clock::now();
    std::string bytes = report.output->serialize();
    if (auto written = write_file_atomically((cwd / "out.json").string(), bytes); !written) {
      state.SkipWithError(written.error().message.c_str());
      break;
    }
    auto t5 = Clock::now();
    run_in_child([](ChildProgress&) { return 0; }, std::chrono::minutes(1), "");
    auto t6 = Clock::now();
    auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    start.push_back(ms(t0, t1));
    load.push_back(ms(t1, t2));
    read.push_back(ms(t2, t3));
    stages.push_back(ms(t3, t4));
    write.push_back(ms(t4, t5));
    isolation.push_back(ms(t5, t6));
    total.push_back(ms(t0, t6));
    state.SetIterationTime(ms(t0, t6) / 1e3);
    std::error_code ec;
    fs::remove_all(cwd, ec);
  }
  state.counters["MB"] = static_cast<double>(fs::file_size(in)) / 1e6;
  state.counters["start_ms"] = median(start);
  state.counters["load_ms"] = median(load);
  state.counters["read_ms"] = median(read);
  state.counters["stages_ms"] = median(stages);
  state.counters["write_ms"] = median(write);
  state.counters["fork_ms"] = median(isolation);
  state.counters["total_ms"] = median(total);
}
// 47 exchanges: a 1.28 MB session with seed 17 (46 give 0.78 MB: one large result more).
BENCHMARK(BM_PerCall)->ArgName("exchanges")->Arg(47)->UseManualTime()->MinTime(2)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  Spawner::instance();  // forked now, while this process is small
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(work_dir(), ec);
  return 0;
}
