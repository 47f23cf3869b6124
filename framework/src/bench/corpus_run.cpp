#include "bench/corpus_run.hpp"

#include "bench/output.hpp"
#include "bench/replay.hpp"
#include "bench/session_read.hpp"
#include "loader/builtin_checkers.hpp"
#include "compactor/protected_tail.hpp"
#include "host/pipeline.hpp"
#include "host/stderr_logger.hpp"
#include "import/importers.hpp"
#include "wire/input_document.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <unistd.h>

namespace compactor::bench {

namespace {

namespace fs = std::filesystem;

// Progress on stderr: a bar redrawn in place on a terminal, a plain line now and then otherwise.
class Progress {
 public:
  explicit Progress(std::size_t sessions) : sessions_(sessions), tty_(::isatty(2) != 0), started_(std::chrono::steady_clock::now()) {}

  void session_done(std::size_t calls) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++done_;
    calls_ += calls;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    double rate = elapsed > 0 ? static_cast<double>(calls_) / elapsed : 0;
    double eta = done_ > 0 ? elapsed * static_cast<double>(sessions_ - done_) / static_cast<double>(done_) : 0;
    if (tty_) {
      const std::size_t width = 30, filled = sessions_ ? width * done_ / sessions_ : width;
      fmt::print(stderr, "\r[{}{}] {}/{} sessions, {} calls, {:.0f} calls/s, ETA {:.0f} s ", std::string(filled, '#'),
                 std::string(width - filled, ' '), done_, sessions_, calls_, rate, eta);
      if (done_ == sessions_) fmt::print(stderr, "\n");
    } else if (done_ == sessions_ || done_ * 20 / sessions_ != (done_ - 1) * 20 / sessions_) {
      fmt::print(stderr, "bench: {}/{} sessions, {} calls, {:.0f} calls/s, ETA {:.0f} s\n", done_, sessions_, calls_, rate, eta);
    }
  }

 private:
  std::mutex mutex_;
  std::size_t sessions_, done_ = 0, calls_ = 0;
  bool tty_;
  std::chrono::steady_clock::time_point started_;
};

// The output tokens the log recorded for each answer, by the answer's message index.
std::map<std::size_t, std::uint64_t> recorded_output_of(const ImportResult& imported) {
  const Conversation& session = *imported.conversation;
  std::map<std::size_t, std::uint64_t> recorded_output;
  std::map<std::size_t, std::uint64_t> by_line;
  for (const auto& call : imported.recorded_calls)
    if (call.output_tokens > 0) by_line.emplace(call.line, call.output_tokens);
  for (std::size_t m = 0; m < imported.message_lines.size() && m < session.size(); ++m)
    if (auto it = by_line.find(imported.message_lines[m]); it != by_line.end() && session[m].role() == Role::assistant)
      recorded_output.emplace(m, it->second);
  return recorded_output;
}

// When the log wrote each answer, by the answer's message index.
std::map<std::size_t, std::int64_t> recorded_time_of(const ImportResult& imported) {
  const Conversation& session = *imported.conversation;
  std::map<std::size_t, std::int64_t> by_line, recorded_time;
  for (const auto& call : imported.recorded_calls)
    if (call.time_ms > 0) by_line.emplace(call.line, call.time_ms);
  for (std::size_t m = 0; m < imported.message_lines.size() && m < session.size(); ++m)
    if (auto it = by_line.find(imported.message_lines[m]); it != by_line.end() && session[m].role() == Role::assistant)
      recorded_time.emplace(m, it->second);
  return recorded_time;
}

// One bench run: the work shared by its threads, and what they found.
class CorpusReplay {
 public:
  CorpusReplay(const CorpusRun& run, std::vector<std::string> mine)
      : run_(run),
        mine_(std::move(mine)),
        scratch_(fs::temp_directory_path() / ("compactor-bench-" + std::to_string(::getpid()))),
        per_session_(mine_.size()),
        skipped_(mine_.size()),
        progress_(mine_.size()) {}

  Expected<BenchResults> replay_all() {
    std::vector<std::thread> threads;
    for (std::uint64_t t = 1; t < run_.jobs; ++t) threads.emplace_back([this, t] { worker(t); });
    worker(0);
    for (auto& t : threads) t.join();
    std::error_code ec;
    fs::remove_all(scratch_, ec);
    if (plugin_failed_) return Error{failure_};
    BenchResults results;
    std::vector<std::string> paths;
    for (const auto& c : run_.configs) paths.push_back(c.file);
    const std::vector<std::string> names = config_names(paths, run_.names);
    for (std::size_t k = 0; k < run_.configs.size(); ++k) results.configs.push_back({paths[k], print_pipeline(run_.configs[k]), names[k]});
    for (std::size_t i = 0; i < mine_.size(); ++i) {
      for (auto& r : per_session_[i]) results.replays.push_back(std::move(r));
      if (skipped_[i]) results.skipped.push_back(std::move(*skipped_[i]));
    }
    results.sort();
    return results;
  }

 private:
  // Each thread builds its own pipelines (stage instances are not shared) from the configs
  // loaded before: the plugins are loaded once, by the loading. One scratch archive per thread:
  // the archive names its temporary files by process id, so two threads putting the same blob at
  // once would collide (blobs are content-addressed, so which folder holds one changes nothing in
  // the output).
  void worker(std::uint64_t index) {
    const std::string archive_dir = (scratch_ / ("archive-" + std::to_string(index))).string();
    auto log = make_stderr_logger("");
    std::vector<Pipeline> pipelines;
    for (const auto& c : run_.configs) {
      auto p = Pipeline::build(c);
      if (!p) {
        std::lock_guard<std::mutex> lock(failure_mutex_);
        plugin_failed_ = true;
        failure_ = p.error().message;
        return;
      }
      pipelines.push_back(std::move(*p));
    }
    for (std::size_t i = next_++; i < mine_.size() && !plugin_failed_; i = next_++)
      replay_file(i, archive_dir, pipelines, *log);
  }

  void replay_file(std::size_t i, const std::string& archive_dir, std::vector<Pipeline>& pipelines, StageLogger& log) {
    std::string name = fs::path(mine_[i]).lexically_relative(run_.corpus).generic_string();
    auto session_read = read_session(mine_[i]);
    if (!session_read) {
      skipped_[i] = Skipped{name, session_read.error().message};
      progress_.session_done(0);
      return;
    }
    const ImportResult* imported = &session_read->result;
    const Conversation& session = *imported->conversation;
    // A session the API would refuse as a whole is not a session an agent lived: skipped. Each
    // session is held to its form's API's rules (a Chat Completions history to that API's).
    const std::vector<CheckerPtr> rules = session_read->format->rules();
    const CheckInput whole{session, session, compute_protected_tail(session, 0), {}};
    if (auto violations = run_checkers(rules, whole); !violations.empty()) {
      skipped_[i] = Skipped{name, violations.front().to_string()};
      progress_.session_done(0);
      return;
    }
    std::string model = session_read->model;
    const bool named = !model.empty() || run_.model.has_value();  // else the table's default stands for it
    if (model.empty()) model = run_.model.value_or(run_.prices->default_model);
    const ModelPrice* price = run_.prices->find(model);
    if (price == nullptr) price = run_.prices->find(run_.prices->default_model);
    ReplaySetup setup;
    setup.session = name;
    setup.price = price;
    setup.prices = run_.prices;
    setup.model = model;
    setup.archive_dir = archive_dir;
    setup.recorded_output = recorded_output_of(*imported);
    setup.recorded_time = recorded_time_of(*imported);
    // An OpenAI model's session (a chat history, a Codex session, a Responses body) is metered with its tokenizer.
    setup.openai = session_read->openai;
    auto window = run_.prices->window_of(model);
    setup.window = run_.window.value_or(window ? window->tokens : 200000);
    setup.rules = &rules;
    choose_meter(named ? price : nullptr, setup);
    if (setup.meter == nullptr) {
      skipped_[i] = Skipped{name, "no meter " + setup.meter_name + ": " + run_.meters->missing};
      progress_.session_done(0);
      return;
    }
    const std::string& source = session_read->source;
    // The evidence probes are the original's: found once, measured in every replay.
    const EvidenceIndex evidence(session, call_answers(session), *setup.meter);
    setup.evidence = &evidence;
    std::size_t calls = 0;
    for (std::size_t k = 0; k <= run_.configs.size(); ++k) {
      // The last replay is the baseline: the whole history every call.
      SessionReplay r = replay_session(session, k < run_.configs.size() ? &pipelines[k] : nullptr, setup, log);
      r.source = source;
      r.config = k < run_.configs.size() ? run_.configs[k].file : std::string(kUncompacted);
      r.config_index = k;
      calls += r.calls.size();
      per_session_[i].push_back(std::move(r));
    }
    progress_.session_done(calls);
  }

  // The meter of a session's replays: the kind asked for, else its model's (o200k for an OpenAI
  // model, else calibrated with the model family's fit).
  void choose_meter(const ModelPrice* price, ReplaySetup& setup) const {
    std::string kind = run_.meter_kind.value_or("");
    if (kind.empty()) {
      std::tie(setup.meter_name, setup.meter) = run_.meters->for_model(price, setup.openai);
      return;
    }
    if (kind == "calibrated")
      kind += "/" + (price != nullptr && run_.meters->by_name.count("calibrated/" + price->family) ? price->family : run_.meters->default_family);
    setup.meter = run_.meters->by_name.at(kind);
    setup.meter_name = kind;
  }

  const CorpusRun& run_;
  const std::vector<std::string> mine_;  // this shard's sessions
  const fs::path scratch_;
  std::vector<std::vector<SessionReplay>> per_session_;
  std::vector<std::optional<Skipped>> skipped_;
  std::atomic<std::size_t> next_{0};
  std::atomic<bool> plugin_failed_{false};
  std::mutex failure_mutex_;
  std::string failure_;
  Progress progress_;
};

}  // namespace

Expected<ModelMeters> make_bench_meters(const std::optional<std::string>& kind, const std::string& fit_path) {
  if (kind) {
    auto meters = make_model_meters({*kind}, fit_path);
    if (!meters && *kind == "calibrated") return Error{meters.error().message + " (the calibrated meter's fit: give --fit FILE)"};
    return meters;
  }
  // The defaults: a corpus of OpenAI sessions needs no fit, so a missing one is said for the
  // sessions that need it, each skipped with the reason.
  auto meters = make_model_meters({"o200k"}, fit_path);
  if (!meters) return meters;
  auto calibrated = make_model_meters({"calibrated"}, fit_path);
  if (!calibrated) {
    meters->missing = calibrated.error().message + " (the default meter's fit: give --fit FILE, or --meter KIND)";
    return meters;
  }
  meters->by_name.insert(calibrated->by_name.begin(), calibrated->by_name.end());
  meters->default_family = calibrated->default_family;
  return meters;
}

Expected<std::vector<std::string>> corpus_files(const std::string& corpus) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(corpus, ec)) {
    std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".json" || ext == ".jsonl" || ext == ".traj")) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  if (ec || files.empty()) return Error{corpus + ": no .json, .jsonl or .traj files"};
  return files;
}

Expected<BenchResults> run_corpus(const CorpusRun& run, const std::vector<std::string>& files) {
  std::vector<std::string> mine;
  for (std::size_t i = 0; i < files.size(); ++i)
    if (i % run.shards == run.shard) mine.push_back(files[i]);
  return CorpusReplay(run, std::move(mine)).replay_all();
}

Expected<BenchResults> merge_outputs(const std::vector<std::string>& dirs) {
  BenchResults results;
  std::set<std::pair<std::string, std::string>> seen;  // session, config
  for (const auto& dir : dirs) {
    auto part = read_outputs(dir);
    if (!part) return part.error();
    if (results.configs.empty()) results.configs = part->configs, results.sweep_long_sessions = part->sweep_long_sessions;
    bool same = results.configs.size() == part->configs.size();
    for (std::size_t k = 0; same && k < part->configs.size(); ++k)
      same = results.configs[k].path == part->configs[k].path && results.configs[k].name == part->configs[k].name;
    if (!same) return Error{dir + ": ran other configs than " + dirs.front()};
    for (auto& r : part->replays) {
      // A shard given twice (or two overlapping shards) would count its sessions twice.
      if (!seen.insert({r.session, r.config}).second)
        return Error{dir + ": " + r.session + " (" + r.config + ") is already in an earlier --merge folder; each session once"};
      results.replays.push_back(std::move(r));
    }
    for (auto& s : part->skipped) results.skipped.push_back(std::move(s));
  }
  results.sort();
  return results;
}

}  // namespace compactor::bench
