// compactor bench --corpus DIR --config F [--config F]… [--out DIR] [--jobs N] [--shard I/N] …
// compactor bench --merge DIR… --out DIR
// Replays every session of a folder call by call through each pipeline (bench/replay.hpp) and
// compares what an agent would pay: tokens sent, prompt-cache reuse, cost, retention.
#include "command_line.hpp"
#include "commands.hpp"
#include "config_loading.hpp"

#include "bench/output.hpp"
#include "bench/replay.hpp"
#include "checkers/builtin_checkers.hpp"
#include "meter/calibration_fit.hpp"
#include "host/exit_code.hpp"
#include "import/importers.hpp"
#include "host/pipeline.hpp"
#include "pricing/price_table.hpp"
#include "compactor/protected_tail.hpp"
#include "host/stderr_logger.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace compactor::cli {

namespace {

namespace fs = std::filesystem;
using namespace compactor::bench;

constexpr const char* kHelp = R"(usage: compactor bench --corpus DIR --config FILE [--config FILE]… [--out DIR] [--jobs N]
                       [--shard I/N] [--prices FILE] [--window TOKENS] [--meter KIND] [--fit FILE]
                       [--model NAME] [--chart-session PATH]
       compactor bench --merge DIR [--merge DIR]… --out DIR [--chart-session PATH]

Replays every session below DIR (*.json messages or request bodies, Claude Code *.jsonl, OpenAI
*.traj; imported as `compactor import` does) call by call through each pipeline, as an agent
lives it: a model call happens before each assistant message of the original, and its request is
the history sent at the previous call plus the messages that arrived since. The model's answers
are the original ones. Per call: tokens sent, the prefix the prompt cache serves (whole messages
byte-identical to the previous request, cache_control ignored, counted when it reaches the
model's minimum cacheable length), cache-write and output tokens, each stage's outcome. A request
over --window is refused: the on_prompt_too_long pipeline runs once on it.

Prints a Markdown table, one row per config. Retention: probes of the original (file paths in
tool inputs, the first line of each is_error result, every user prompt, the tool names) are
visible when their exact text is in the request, recoverable when also in a blob its receipts
reach; a probe neither visible nor recoverable fails the bench (exit 1).

options:
  --out DIR          sessions.jsonl (one line per session x config, the per-call arrays),
                     sessions.csv, timings.jsonl (the only wall times), skipped.jsonl,
                     configs.jsonl, pipeline-N.yaml, tokens-per-call.svg, cumulative-cost.svg
  --jobs N           replay sessions on N threads (default 1); the output is the same
  --shard I/N        replay only the sessions whose index (in path order) is I modulo N
  --merge DIR        combine the --out folders of shards into one --out (repeatable)
  --prices FILE      the price table (default: prices.yaml beside the first config)
  --window TOKENS    the model's hard limit (default 200000)
  --meter KIND       count tokens with KIND (chars4, cl100k, o200k, claude-legacy, calibrated);
                     default: the config's meter when its budget is in tokens, else calibrated
                     (Claude Code and messages-array sessions) or o200k (OpenAI sessions)
  --fit FILE         the calibrated meter's fit (default: fits/claude-code.yaml beside the first config)
  --model NAME       the model of sessions whose log names none (default: the price table's)
  --chart-session P  the session of tokens-per-call.svg (default: the one with the most calls)

Sessions that cannot be imported, or that the API would refuse as they are (the input checkers),
are reported and skipped. A config that fails validation stops the bench
before anything runs. exit codes: 0 ok; 1 a probe was lost or a call failed the checkers;
2 bad input or config; 3 plugin failure or internal error.
)";

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

// The meters a replay may count with, made once and shared by every thread.
struct Meters {
  std::map<std::string, std::shared_ptr<const Meter>> by_name;  // "o200k", "calibrated/sonnet"…
  std::string default_family;
};

std::string model_of(const ImportResult& imported) {
  for (const auto& c : imported.recorded_calls)
    if (!c.model.empty() && c.model != "<synthetic>") return c.model;
  return "";
}

int finish(BenchResults& results, const std::optional<std::string>& out) {
  results.sort();
  if (out)
    if (auto w = write_outputs(results, *out); !w) {
      fmt::print(stderr, "compactor bench: {}\n", w.error().message);
      return kExitPluginError;
    }
  fmt::print("{}", markdown_table(results));
  int code = kExitOk;
  for (const auto& s : results.skipped) fmt::print(stderr, "compactor bench: skipped {}: {}\n", s.session, s.reason);
  for (const auto& r : results.replays) {
    for (const auto& e : r.errors) fmt::print(stderr, "compactor bench: {} ({}): {}\n", r.session, r.config, e);
    for (const Retention* ret : {&r.median, &r.last})
      for (const auto& p : ret->lost)
        fmt::print(stderr, "compactor bench: {} ({}): call {}: lost probe \"{}\"\n", r.session, r.config, ret->call,
                   p.substr(0, 120));
    if (r.failures || r.rejections || !r.median.lost.empty() || !r.last.lost.empty()) code = kExitNotDone;
  }
  return code;
}

int merge(const ParsedArgs& args) {
  BenchResults results;
  std::set<std::pair<std::string, std::string>> seen;  // session, config
  for (const auto& dir : args.options.at("merge")) {
    auto part = read_outputs(dir);
    if (!part) {
      fmt::print(stderr, "compactor bench: {}\n", part.error().message);
      return kExitBadInput;
    }
    if (results.configs.empty()) results.configs = part->configs;
    bool same = results.configs.size() == part->configs.size();
    for (std::size_t k = 0; same && k < part->configs.size(); ++k) same = results.configs[k].path == part->configs[k].path;
    if (!same) {
      fmt::print(stderr, "compactor bench: {}: ran other configs than {}\n", dir, args.options.at("merge").front());
      return kExitBadInput;
    }
    for (auto& r : part->replays) {
      // A shard given twice (or two overlapping shards) would count its sessions twice.
      if (!seen.insert({r.session, r.config}).second) {
        fmt::print(stderr, "compactor bench: {}: {} ({}) is already in an earlier --merge folder; each session once\n", dir,
                   r.session, r.config);
        return kExitBadInput;
      }
      results.replays.push_back(std::move(r));
    }
    for (auto& s : part->skipped) results.skipped.push_back(std::move(s));
  }
  results.chart_session = args.get("chart-session").value_or("");
  return finish(results, args.get("out"));
}

bool known_meter(const std::string& kind) {
  const auto kinds = meter_kinds();
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

int print_error(const std::string& message) {
  fmt::print(stderr, "compactor bench: {}\n", message);
  return kExitBadInput;
}

std::optional<std::uint64_t> parse_count(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 12) return std::nullopt;
  return std::stoull(text);
}

}  // namespace

int bench_command(int argc, char** argv) {
  const Command command{"bench", kHelp};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2,
                            {{"corpus"}, {"config", true, true}, {"out"}, {"jobs"}, {"shard"}, {"merge", true, true},
                             {"prices"}, {"window"}, {"meter"}, {"fit"}, {"model"}, {"chart-session"}},
                            exit_code);
  if (!args) return exit_code;
  if (!args->positional.empty()) return command.usage_error("unexpected argument " + args->positional.front());
  if (args->has("merge")) {
    if (!args->get("out")) return command.usage_error("--merge needs --out");
    if (args->has("corpus") || args->has("config")) return command.usage_error("--merge takes no --corpus or --config");
    return merge(*args);
  }
  std::string error;
  std::uint64_t jobs = 1, window = 200000, shard = 0, shards = 1;
  if (!args->get("corpus")) error = "--corpus is required";
  else if (!args->has("config")) error = "at least one --config is required";
  else if (auto j = args->get("jobs"); j && (!parse_count(*j) || *parse_count(*j) == 0 || *parse_count(*j) > 256))
    error = "--jobs takes a number from 1 to 256, got \"" + *j + "\"";
  else if (auto w = args->get("window"); w && (!parse_count(*w) || *parse_count(*w) == 0))
    error = "--window takes a positive number of tokens, got \"" + *w + "\"";
  else if (auto m = args->get("meter"); m && !known_meter(*m))
    error = "--meter takes chars4, cl100k, o200k, claude-legacy or calibrated, got \"" + *m + "\"";
  if (auto s = args->get("shard"); error.empty() && s) {
    auto slash = s->find('/');
    auto i = parse_count(s->substr(0, slash)), n = slash == std::string::npos ? std::nullopt : parse_count(s->substr(slash + 1));
    if (!i || !n || *n == 0 || *i >= *n) error = "--shard takes I/N with 0 <= I < N, got \"" + *s + "\"";
    else shard = *i, shards = *n;
  }
  if (!error.empty()) return command.usage_error(error);
  if (auto j = args->get("jobs")) jobs = *parse_count(*j);
  if (auto w = args->get("window")) window = *parse_count(*w);

  // Everything that can be wrong with the configs, prices, meters and --out stops the bench here.
  const auto& config_paths = args->options.at("config");
  std::vector<PipelineConfig> configs;
  for (const auto& path : config_paths) {
    auto config = load_config_or_print_errors(path, exit_code);
    if (!config) return exit_code;
    configs.push_back(std::move(*config));
  }
  if (auto out = args->get("out")) {
    std::error_code ec;
    fs::create_directories(*out, ec);
    if (ec || !fs::is_directory(*out, ec)) return print_error(*out + ": --out: cannot create the folder" + (ec ? ": " + ec.message() : ""));
  }
  const fs::path beside = fs::path(config_paths.front()).parent_path();
  std::string prices_path = args->get("prices").value_or((beside / "prices.yaml").string());
  auto prices = read_price_table(prices_path);
  if (!prices) return print_error(prices.error().message + (args->get("prices") ? "" : " (the default beside the first config: give --prices FILE)"));
  std::string fit_path = args->get("fit").value_or((beside / "fits" / "claude-code.yaml").string());
  std::optional<std::string> meter_kind = args->get("meter");
  bool need_default_meters = meter_kind.has_value();
  for (const auto& c : configs) need_default_meters |= c.budget.unit != SizeUnit::tokens;
  Meters meters;
  if (need_default_meters) {
    std::vector<std::string> kinds = meter_kind ? std::vector<std::string>{*meter_kind} : std::vector<std::string>{"calibrated", "o200k"};
    for (const auto& kind : kinds) {
      if (kind != "calibrated") {
        auto m = make_meter(MeterSpec{kind, "", ""});
        if (!m) return print_error(m.error().message);
        meters.by_name[kind] = *m;
        continue;
      }
      auto fit = read_calibration_fit(fit_path);
      if (!fit) return print_error(fit.error().message + " (the default meter's fit: give --fit FILE, or --meter KIND)");
      meters.default_family = fit->default_family;
      for (const auto& [family, _] : fit->families) {
        auto m = make_meter(MeterSpec{"calibrated", fit_path, family});
        if (!m) return print_error(m.error().message);
        meters.by_name["calibrated/" + family] = *m;
      }
    }
  }
  BenchResults results;
  for (const auto& c : configs) results.configs.push_back({c.file, print_pipeline(c)});
  results.chart_session = args->get("chart-session").value_or("");

  const std::string corpus = *args->get("corpus");
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(corpus, ec)) {
    std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".json" || ext == ".jsonl" || ext == ".traj")) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  if (ec || files.empty()) {
    fmt::print(stderr, "compactor bench: {}: no .json, .jsonl or .traj files\n", corpus);
    return kExitBadInput;
  }
  std::vector<std::string> mine;  // this shard's sessions
  for (std::size_t i = 0; i < files.size(); ++i)
    if (i % shards == shard) mine.push_back(files[i]);

  // Each thread builds its own pipelines (stage instances are not shared) from the configs
  // loaded above: the plugins are loaded once, by the loading.
  fs::path scratch = fs::temp_directory_path() / ("compactor-bench-" + std::to_string(::getpid()));
  std::vector<std::vector<SessionReplay>> per_session(mine.size());
  std::vector<std::optional<Skipped>> skipped(mine.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> plugin_failed{false};
  std::mutex failure_mutex;
  std::string failure;
  Progress progress(mine.size());
  // One scratch archive per thread: the archive names its temporary files by process id, so two
  // threads putting the same blob at once would collide (blobs are content-addressed, so which
  // folder holds one changes nothing in the output).
  auto worker = [&](std::uint64_t index) {
    const std::string archive_dir = (scratch / ("archive-" + std::to_string(index))).string();
    auto log = make_stderr_logger("");
    const std::vector<CheckerPtr> input_checkers = make_input_checkers();
    std::vector<Pipeline> pipelines;
    for (const auto& c : configs) {
      auto p = Pipeline::build(c);
      if (!p) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        plugin_failed = true;
        failure = p.error().message;
        return;
      }
      pipelines.push_back(std::move(*p));
    }
    for (std::size_t i = next++; i < mine.size() && !plugin_failed; i = next++) {
      std::string name = fs::path(mine[i]).lexically_relative(corpus).generic_string();
      auto imported = import_file(mine[i], std::nullopt);
      if (!imported || !imported->conversation) {
        skipped[i] = Skipped{name, imported ? "no message to import" : imported.error().message};
        progress.session_done(0);
        continue;
      }
      const Conversation& session = *imported->conversation;
      // A session the API would refuse as a whole is not a session an agent lived: skipped.
      if (auto violations = run_checkers(input_checkers, CheckInput{session, session, compute_protected_tail(session, 0), {}});
          !violations.empty()) {
        skipped[i] = Skipped{name, violations.front().to_string()};
        progress.session_done(0);
        continue;
      }
      std::string model = model_of(*imported);
      if (model.empty()) model = args->get("model").value_or(prices->default_model);
      const ModelPrice* price = prices->find(model);
      if (price == nullptr) price = prices->find(prices->default_model);
      bool openai = imported->report.format == ImportFormat::openai;
      std::map<std::size_t, std::uint64_t> recorded_output;  // answer's message index → output tokens the log recorded
      {
        std::map<std::size_t, std::uint64_t> by_line;
        for (const auto& call : imported->recorded_calls)
          if (call.output_tokens > 0) by_line.emplace(call.line, call.output_tokens);
        for (std::size_t m = 0; m < imported->message_lines.size() && m < session.size(); ++m)
          if (auto it = by_line.find(imported->message_lines[m]); it != by_line.end() && session[m].role() == Role::assistant)
            recorded_output.emplace(m, it->second);
      }
      std::size_t calls = 0;
      for (std::size_t k = 0; k < configs.size(); ++k) {
        ReplaySetup setup;
        setup.session = name;
        setup.price = price;
        setup.prices = &*prices;
        setup.model = model;
        setup.window = window;
        setup.archive_dir = archive_dir;
        setup.recorded_output = recorded_output;
        if (configs[k].budget.unit == SizeUnit::tokens && !meter_kind && configs[k].meter) {
          setup.meter = configs[k].meter;
          setup.meter_name = configs[k].meter_spec->kind +
                             (configs[k].meter_spec->kind == "calibrated" ? "/" + (configs[k].meter_spec->family.empty() ? std::string("default") : configs[k].meter_spec->family) : "");
        } else {
          std::string kind = meter_kind.value_or(openai ? "o200k" : "calibrated");
          if (kind == "calibrated") {
            std::string family = price != nullptr && meters.by_name.count("calibrated/" + price->family) ? price->family : meters.default_family;
            kind = "calibrated/" + family;
          }
          setup.meter = meters.by_name.at(kind);
          setup.meter_name = kind;
        }
        SessionReplay r = replay_session(session, pipelines[k], setup, *log);
        r.config = configs[k].file;
        r.config_index = k;
        calls += r.calls.size();
        per_session[i].push_back(std::move(r));
      }
      progress.session_done(calls);
    }
  };
  std::vector<std::thread> threads;
  for (std::uint64_t t = 1; t < jobs; ++t) threads.emplace_back(worker, t);
  worker(0);
  for (auto& t : threads) t.join();
  fs::remove_all(scratch, ec);
  if (plugin_failed) {
    fmt::print(stderr, "{}\n", failure);
    return kExitPluginError;
  }
  for (std::size_t i = 0; i < mine.size(); ++i) {
    for (auto& r : per_session[i]) results.replays.push_back(std::move(r));
    if (skipped[i]) results.skipped.push_back(std::move(*skipped[i]));
  }
  return finish(results, args->get("out"));
}

}  // namespace compactor::cli
