// compactor bench --corpus DIR --config F [--config F]… [--out DIR] [--jobs N] [--shard I/N] …
// compactor bench --merge DIR… --out DIR
// Replays every session of a folder call by call through each pipeline (bench/corpus_run.hpp) and
// compares what an agent would pay: tokens sent, prompt-cache reuse, cost, retention.
#include "command_line.hpp"
#include "commands.hpp"
#include "config_loading.hpp"

#include "bench/corpus_run.hpp"
#include "bench/output.hpp"
#include "bench/sweep.hpp"
#include "bench/sweep_report.hpp"
#include "bench/verdict.hpp"
#include "host/atomic_file.hpp"
#include "host/exit_code.hpp"
#include "meter/meter_kinds.hpp"
#include "pricing/price_table.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <unistd.h>

namespace compactor::cli {

namespace {

namespace fs = std::filesystem;
using namespace compactor::bench;

constexpr const char* kHelp = R"(usage: compactor bench --corpus DIR --config [NAME=]FILE [--config [NAME=]FILE]… [--out DIR] [--jobs N]
                       [--shard I/N] [--prices FILE] [--window TOKENS] [--meter KIND] [--fit FILE]
                       [--model NAME] [--chart-session PATH] [--fail-if-dearer] [--explain]
       compactor bench --corpus DIR --sweep FILE [--config FILE]… [options as above]
       compactor bench --merge DIR [--merge DIR]… --out DIR [--chart-session PATH] [--fail-if-dearer] [--explain]

Replays every session below DIR (*.json messages or request bodies, Claude Code *.jsonl, OpenAI
*.traj; imported as `compactor import` does) call by call through each pipeline, as an agent
lives it: a model call happens before each assistant message of the original, and its request is
the history sent at the previous call plus the messages that arrived since. The model's answers
are the original ones. Per call: tokens sent, the prefix the prompt cache serves (whole messages
byte-identical to the previous request, cache_control ignored, counted when it reaches the
model's minimum cacheable length), cache-write and output tokens, each stage's outcome. A request
over the model's window is refused: the on_prompt_too_long pipeline runs once on it. Every
session is replayed uncompacted too (the whole history every call): the baseline each config's
cost is compared with.

Prints first a verdict: each config's cost with re-fetch against uncompacted's and its evidence
visible, which is cheapest, which keeps the most evidence, the cheapest keeping 97% of it, which
are on the frontier and which dominate which, and what those figures do not show (calls left
over budget, refusals, failures). A config goes by NAME (--config NAME=FILE), else its file's
stem. Then Markdown tables: one row per config and the uncompacted baseline; the cost split into
cache reads, cache writes, uncached input and output; cost and retention per source format
(claude-code, codex, gemini-cli, openai, anthropic); then the sessions a config made dearer than
uncompacted. Retention: probes of the original (file paths in
tool inputs, the first line of each is_error result, every user prompt, the tool names) are
visible when their exact text is in the request, recoverable when also in a blob its receipts
reach; a probe neither visible nor recoverable fails the bench (exit 1).

Evidence: at a call, the lines (trimmed, 30 bytes or more) of the original's next assistant
action (text, tool inputs) that occur verbatim in an earlier tool output and nowhere in the
user's or the agent's own earlier words are what the agent went on to use; "evidence visible" is
the share of them the request sent holds, over the calls that have some. A missed one is charged
as the call that fetches it again (the history sent read from the cache, the smallest earlier
result holding it written, 50 output tokens; once per call and result): "cost with re-fetch",
which "dearer than uncompacted" and --fail-if-dearer compare.

--sweep FILE runs a grid of budgets, stage parameters and stage orderings over a base config
(docs/bench.md, "Sweeps"): each point is a config of the run; after the tables, each config's
cost with re-fetch against uncompacted's and its evidence visible, which are on the frontier and
which dominate which, over every session and over the long ones (frontier.svg, frontier-long.svg).

options:
  --out DIR          report.html (the verdict, tables and charts in one self-contained page),
                     sessions.jsonl (one line per session x config, the baseline's last, the
                     per-call arrays), sessions.csv, timings.jsonl (the only wall times),
                     skipped.jsonl, configs.jsonl, pipeline-N.yaml, and the charts as SVG and
                     PNG: tokens-per-call, cumulative-cost, cost-split, cost-by-session,
                     retention, evidence (the frontier: cost against evidence, a point per config)
  --jobs N           replay sessions on N threads (default 1); the output is the same
  --shard I/N        replay only the sessions whose index (in path order) is I modulo N
  --merge DIR        combine the --out folders of shards into one --out (repeatable)
  --prices FILE      the price table (default: prices.yaml beside the first config)
  --window TOKENS    the model's hard limit (default: each session's model's context_window in
                     the price table, 200000 when it gives none)
  --meter KIND       count tokens with KIND (chars4, cl100k, o200k, claude-legacy, calibrated),
                     every config and the baseline alike; default: the session's model's, o200k
                     for an OpenAI model, else calibrated with the model family's fit
  --fit FILE         the calibrated meter's fit (default: fits/claude-code.yaml beside the first config)
  --model NAME       the model of sessions whose log names none (default: the price table's)
  --chart-session P  the session of tokens-per-call.svg (default: the one with the most calls)
  --fail-if-dearer   exit 1 when a config made a session dearer than uncompacted (each with its
                     re-fetch charge) where the uncompacted replay fit the window
  --explain          after the tables, every evidence line a replay missed: the call, the line
                     and the result it came from

Sessions that cannot be imported, or that the API would refuse as they are (the input checkers),
are reported and skipped. A config that fails validation stops the bench
before anything runs. exit codes: 0 ok; 1 a probe was lost or a call failed the checkers (or,
with --fail-if-dearer, a session was dearer than uncompacted); 2 bad input or config; 3 plugin
failure or internal error. Calls a config leaves over its budget are a figure (the verdict and
the table say them), not a failure: they do not change the exit code.
)";

int print_error(const std::string& message) {
  fmt::print(stderr, "compactor bench: {}\n", message);
  return kExitBadInput;
}

std::optional<std::uint64_t> parse_count(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 12) return std::nullopt;
  return std::stoull(text);
}

bool known_meter(const std::string& kind) {
  const auto kinds = meter_kinds();
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

// Writes the --out folder, prints the table and what went wrong; exit 1 when a call failed the
// checkers or a probe was lost.
int finish(BenchResults& results, const ParsedArgs& args) {
  if (auto out = args.get("out")) {
    std::vector<std::string> notes;
    if (auto w = write_outputs(results, *out, &notes); !w) {
      fmt::print(stderr, "compactor bench: {}\n", w.error().message);
      return kExitPluginError;
    }
    for (const auto& note : notes) fmt::print(stderr, "compactor bench: {}\n", note);
  }
  fmt::print("{}", verdict(results));
  fmt::print("{}", markdown_table(results));
  fmt::print("{}", sweep_report(results));
  if (args.has("explain")) fmt::print("{}", explain_misses(results));
  for (const auto& line : notices(results)) fmt::print(stderr, "compactor bench: {}\n", line);
  std::size_t dearer = 0;
  for (const auto& d : dearer_sessions(results)) dearer += d.baseline_fits;
  if (args.has("fail-if-dearer") && dearer > 0)
    fmt::print(stderr, "compactor bench: {} session{} dearer than uncompacted where uncompacted fit the window\n", dearer,
               dearer == 1 ? "" : "s");
  return passed(results) && !(args.has("fail-if-dearer") && dearer > 0) ? kExitOk : kExitNotDone;
}

int merge(const ParsedArgs& args) {
  auto results = merge_outputs(args.options.at("merge"));
  if (!results) return print_error(results.error().message);
  results->chart_session = args.get("chart-session").value_or("");
  return finish(*results, args);
}

// The numbers and the meter of a corpus run from its options; the usage error when one is bad.
std::string read_run_options(const ParsedArgs& args, CorpusRun& run) {
  std::string error;
  if (!args.get("corpus")) error = "--corpus is required";
  else if (!args.has("config") && !args.has("sweep")) error = "at least one --config or a --sweep is required";
  else if (auto j = args.get("jobs"); j && (!parse_count(*j) || *parse_count(*j) == 0 || *parse_count(*j) > 256))
    error = "--jobs takes a number from 1 to 256, got \"" + *j + "\"";
  else if (auto w = args.get("window"); w && *w != "auto" && (!parse_count(*w) || *parse_count(*w) == 0))
    error = "--window takes a positive number of tokens or auto, got \"" + *w + "\"";
  else if (auto m = args.get("meter"); m && !known_meter(*m))
    error = "--meter takes chars4, cl100k, o200k, claude-legacy or calibrated, got \"" + *m + "\"";
  if (auto s = args.get("shard"); error.empty() && s) {
    auto slash = s->find('/');
    auto i = parse_count(s->substr(0, slash)), n = slash == std::string::npos ? std::nullopt : parse_count(s->substr(slash + 1));
    if (!i || !n || *n == 0 || *i >= *n) error = "--shard takes I/N with 0 <= I < N, got \"" + *s + "\"";
    else run.shard = *i, run.shards = *n;
  }
  if (!error.empty()) return error;
  if (auto j = args.get("jobs")) run.jobs = *parse_count(*j);
  if (auto w = args.get("window"); w && *w != "auto") run.window = *parse_count(*w);
  run.corpus = *args.get("corpus");
  run.meter_kind = args.get("meter");
  run.model = args.get("model");
  return "";
}

// The sweep's points as configs of the run, each named by its settings (the name, not a path,
// so that shards of one sweep merge); a point the loader refuses is said and left out. The points'
// files are kept in --out/sweep/.
int load_sweep(const Sweep& sweep, const ParsedArgs& args, CorpusRun& run) {
  const fs::path dir = args.get("out") ? fs::path(*args.get("out")) / "sweep" : fs::temp_directory_path() / ("compactor-sweep-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return print_error(dir.string() + ": cannot create the folder: " + ec.message());
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    const std::string file = (dir / ("point-" + std::to_string(i + 1) + ".yaml")).string();
    if (auto w = write_file_atomically(file, "# " + sweep.points[i].name + "\n" + sweep.points[i].yaml); !w) return print_error(w.error().message);
    ConfigLoadResult loaded = load_pipeline_config(file);
    if (!loaded.config) {
      fmt::print(stderr, "compactor bench: skipped {}: {}\n", sweep.points[i].name, loaded.errors.empty() ? "cannot load" : loaded.errors.front());
      continue;
    }
    loaded.config->file = sweep.points[i].name;
    run.configs.push_back(std::move(*loaded.config));
    run.names.emplace_back();
  }
  if (!args.get("out")) fs::remove_all(dir, ec);
  int exit_code = kExitOk;
  for (const auto& path : sweep.configs) {
    auto config = load_config_or_print_errors(path, exit_code);
    if (!config) return exit_code;
    run.configs.push_back(std::move(*config));
    run.names.emplace_back();
  }
  return run.configs.empty() ? print_error(*args.get("sweep") + ": no point of the sweep loads") : kExitOk;
}

// --config NAME=PATH: a name (no '/') before the first '='; else the whole text is the path (a
// file whose name holds '=' is given as ./NAME=…). The names are checked once they are all known.
std::pair<std::string, std::string> name_and_path(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || text.substr(0, eq).find('/') != std::string::npos) return {"", text};
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// A usage error for a name that a table could not show or that two configs share; "" when fine.
std::string names_error(const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n.empty()) continue;
    if (n == kUncompacted) return "--config " + n + "=…: \"" + n + "\" is the baseline's name";
    if (n.find_first_of("|\n#:") != std::string::npos) return "--config " + n + "=…: a name holds no '|', ':', '#' or line break";
    if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), n) != names.begin() + static_cast<std::ptrdiff_t>(i))
      return "--config " + n + "=…: two configs named \"" + n + "\"";
  }
  return "";
}

// Everything that can be wrong with the configs, prices, meters and --out stops the bench before
// any session is replayed.
int run_bench(const ParsedArgs& args, CorpusRun& run) {
  int exit_code = kExitOk;
  std::vector<std::string> config_paths;
  for (const auto& text : args.has("config") ? args.options.at("config") : std::vector<std::string>{}) {
    auto [name, path] = name_and_path(text);
    run.names.push_back(std::move(name));
    config_paths.push_back(std::move(path));
  }
  if (auto error = names_error(run.names); !error.empty()) return print_error(error);
  for (const auto& path : config_paths) {
    auto config = load_config_or_print_errors(path, exit_code);
    if (!config) return exit_code;
    say_summaries_inline(*config, "bench");
    run.configs.push_back(std::move(*config));
  }
  std::optional<Sweep> sweep;
  if (auto file = args.get("sweep")) {
    auto read = read_sweep(*file);
    if (!read) return print_error(read.error().message);
    sweep = std::move(*read);
    if (int code = load_sweep(*sweep, args, run); code != kExitOk) return code;
  }
  if (auto out = args.get("out")) {
    std::error_code ec;
    fs::create_directories(*out, ec);
    if (ec || !fs::is_directory(*out, ec)) return print_error(*out + ": --out: cannot create the folder" + (ec ? ": " + ec.message() : ""));
  }
  const fs::path beside = fs::path(sweep ? sweep->base : config_paths.front()).parent_path();
  auto prices = read_price_table(args.get("prices").value_or((beside / "prices.yaml").string()));
  if (!prices) return print_error(prices.error().message + (args.get("prices") ? "" : " (the default beside the first config: give --prices FILE)"));
  auto meters = make_bench_meters(run.meter_kind, args.get("fit").value_or((beside / "fits" / "claude-code.yaml").string()));
  if (!meters) return print_error(meters.error().message);
  auto files = corpus_files(run.corpus);
  if (!files) return print_error(files.error().message);
  run.prices = &*prices;
  run.meters = &*meters;
  auto results = run_corpus(run, *files);
  if (!results) {
    fmt::print(stderr, "{}\n", results.error().message);
    return kExitPluginError;
  }
  results->chart_session = args.get("chart-session").value_or("");
  if (sweep) results->sweep_long_sessions = sweep->long_sessions;
  return finish(*results, args);
}

}  // namespace

int bench_command(int argc, char** argv) {
  const Command command{"bench", kHelp};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2,
                            {{"corpus"}, {"config", true, true}, {"out"}, {"jobs"}, {"shard"}, {"merge", true, true},
                             {"prices"}, {"window"}, {"meter"}, {"fit"}, {"model"}, {"chart-session"}, {"fail-if-dearer", false, false},
                             {"explain", false, false}, {"sweep"}},
                            exit_code);
  if (!args) return exit_code;
  if (!args->positional.empty()) return command.usage_error("unexpected argument " + args->positional.front());
  if (args->has("merge")) {
    if (!args->get("out")) return command.usage_error("--merge needs --out");
    if (args->has("corpus") || args->has("config") || args->has("sweep")) return command.usage_error("--merge takes no --corpus, --config or --sweep");
    return merge(*args);
  }
  CorpusRun run;
  if (auto error = read_run_options(*args, run); !error.empty()) return command.usage_error(error);
  return run_bench(*args, run);
}

}  // namespace compactor::cli
