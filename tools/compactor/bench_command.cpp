// compactor bench --corpus DIR --config F [--config F]… [--reason prompt_too_long] [--report F]
// Replays every session of a folder through each pipeline and compares them.
#include "command_line.hpp"
#include "commands.hpp"
#include "config_loading.hpp"

#include "compactor/atomic_file.hpp"
#include "compactor/exit_code.hpp"
#include "compactor/importers.hpp"
#include "compactor/pipeline.hpp"
#include "compactor/stderr_logger.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <unistd.h>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"(usage: compactor bench --corpus DIR --config FILE [--config FILE]… [--reason prompt_too_long]
                       [--report FILE]

Runs every session below DIR (*.json messages or request bodies, Claude Code *.jsonl, OpenAI
*.traj; imported as `compactor import` does) through each pipeline and prints, per config: the
sessions run, how many end within budget, over budget, stopped (a rejection or decline under
abort) or failed; the total size before and after (in the config's unit) and its ratio; how many
summaries were made (the lossy step); and the wall time per session (median, max, total). The
archive of every run goes to a scratch folder that is removed afterwards, so the sessions and the
configs' archive folders are never touched. Prints progress on stderr. --report writes the same as
JSON, with each config's resolved pipeline.
)";

struct ConfigTotals {
  std::string config;
  std::size_t sessions = 0, ok = 0, over = 0, stopped = 0, failed = 0, summaries = 0;
  std::uint64_t before = 0, after = 0;
  std::vector<double> ms;
  std::string unit;
  std::string resolved;
};

}  // namespace

int bench_command(int argc, char** argv) {
  const Command command{"bench", kHelp};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2, {{"corpus"}, {"config", true, true}, {"reason"}, {"report"}}, exit_code);
  if (!args) return exit_code;
  std::string error;
  if (!args->positional.empty()) error = "unexpected argument " + args->positional.front();
  else if (!args->get("corpus")) error = "--corpus is required";
  else if (!args->has("config")) error = "at least one --config is required";
  else if (args->get("reason") && *args->get("reason") != "prompt_too_long") error = "--reason takes only prompt_too_long";
  if (!error.empty()) return command.usage_error(error);
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(*args->get("corpus"), ec)) {
    std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".json" || ext == ".jsonl" || ext == ".traj")) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  if (ec || files.empty()) {
    fmt::print(stderr, "compactor bench: {}: no .json, .jsonl or .traj files\n", *args->get("corpus"));
    return kExitBadInput;
  }
  // Import once; a file that cannot be imported is reported and left out of every pipeline.
  std::vector<std::pair<std::string, Conversation>> sessions;
  for (const auto& f : files) {
    auto imported = import_file(f, std::nullopt);
    if (!imported || !imported->conversation) {
      fmt::print(stderr, "compactor bench: skipping {}: {}\n", f, imported ? "no message to import" : imported.error().message);
      continue;
    }
    sessions.emplace_back(f, std::move(*imported->conversation));
  }

  fs::path scratch = fs::temp_directory_path() / ("compactor-bench-" + std::to_string(::getpid()));
  auto log = make_stderr_logger("");
  std::vector<ConfigTotals> all;
  for (const auto& config_path : args->options.at("config")) {
    auto config = load_config_or_print_errors(config_path, exit_code);
    if (!config) return exit_code;
    ConfigTotals t;
    t.config = config_path;
    t.unit = std::string(to_string(config->budget.unit));
    t.resolved = print_pipeline(*config);
    auto pipeline = Pipeline::build(std::move(*config));
    if (!pipeline) {
      fmt::print(stderr, "{}\n", pipeline.error().message);
      return kExitPluginError;
    }
    for (std::size_t i = 0; i < sessions.size(); ++i) {
      fmt::print(stderr, "\r{}: {}/{}", config_path, i + 1, sessions.size());
      RunOptions options;
      options.prompt_too_long = args->has("reason");
      options.input_name = sessions[i].first;
      options.archive_dir = (scratch / "archive").string();
      auto started = std::chrono::steady_clock::now();
      RunReport r = pipeline->run(sessions[i].second, options, *log);
      t.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
      ++t.sessions;
      t.before += r.input_size.sizes.in(pipeline->config().budget.unit);
      t.after += (r.output ? r.output_size : r.input_size).sizes.in(pipeline->config().budget.unit);
      if (r.status == "ok") ++t.ok;
      else if (r.status == "over_budget") ++t.over;
      else if (r.status == "aborted") ++t.stopped;
      else ++t.failed;
      for (const auto& s : r.stages)
        if (s.status == StageStatus::committed &&
            (s.stage == "summarize" || s.stage == "reactive_compact" || s.stage == "compact_request"))
          ++t.summaries;
    }
    fmt::print(stderr, "\n");
    all.push_back(std::move(t));
  }
  fs::remove_all(scratch, ec);

  fmt::print("{:<34} {:>8} {:>6} {:>6} {:>8} {:>7} {:>10} {:>14} {:>14} {:>7} {:>9} {:>9}\n", "config", "sessions", "ok",
             "over", "stopped", "failed", "summaries", "before", "after", "ratio", "p50 ms", "max ms");
  boost::json::array report;
  for (auto& t : all) {
    std::sort(t.ms.begin(), t.ms.end());
    double p50 = t.ms.empty() ? 0 : t.ms[t.ms.size() / 2], max = t.ms.empty() ? 0 : t.ms.back();
    double ratio = t.before ? static_cast<double>(t.after) / static_cast<double>(t.before) : 1.0;
    fmt::print("{:<34} {:>8} {:>6} {:>6} {:>8} {:>7} {:>10} {:>14} {:>14} {:>7.3f} {:>9.2f} {:>9.2f}\n", t.config, t.sessions,
               t.ok, t.over, t.stopped, t.failed, t.summaries, fmt::format("{} {}", t.before, t.unit),
               fmt::format("{} {}", t.after, t.unit), ratio, p50, max);
    report.push_back(boost::json::object{{"config", t.config}, {"sessions", t.sessions}, {"ok", t.ok}, {"over_budget", t.over},
                                         {"stopped", t.stopped}, {"failed", t.failed}, {"summaries", t.summaries},
                                         {"unit", t.unit}, {"size_before", t.before}, {"size_after", t.after},
                                         {"p50_ms", p50}, {"max_ms", max}, {"resolved_pipeline", t.resolved}});
  }
  if (auto path = args->get("report")) {
    auto w = write_file_atomically(*path, boost::json::serialize(report) + "\n");
    if (!w) {
      fmt::print(stderr, "compactor bench: {}\n", w.error().message);
      return kExitPluginError;
    }
  }
  return kExitOk;
}

}  // namespace compactor::cli
