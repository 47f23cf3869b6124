// A bench over a folder of sessions: each session of this shard imported, checked as the API
// would, and replayed call by call through every pipeline (bench/replay.hpp) on a number of
// threads; and the merge of the --out folders of shards into one set of results. The threads and
// the shards change nothing in the results.
#pragma once

#include "bench/results.hpp"

#include "compactor/error.hpp"
#include "compactor/meter.hpp"
#include "host/model_meters.hpp"
#include "host/pipeline_config.hpp"
#include "pricing/price_table.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace compactor::bench {

// The meters a replay counts with (what the provider bills, as well as Compactor can count it),
// made once and shared by every thread: `kind` when given (calibrated: one per family of the fit
// in `fit_path`), else calibrated and o200k, each session's model's (host/model_meters.hpp).
Expected<ModelMeters> make_bench_meters(const std::optional<std::string>& kind, const std::string& fit_path);

struct CorpusRun {
  std::string corpus;                  // the folder; sessions are named relative to it
  std::vector<PipelineConfig> configs;  // loaded: each thread builds its own pipelines from them
  std::vector<std::string> names;       // given by --config NAME=PATH, or "" (bench/results.hpp config_names)
  const PriceTable* prices = nullptr;
  const ModelMeters* meters = nullptr;
  // The meter of every replay, of every config and of the baseline alike, so that their costs
  // compare; when absent, the session's model's: o200k for an OpenAI model, else calibrated (the
  // model's family, or the fit's default).
  std::optional<std::string> meter_kind;
  std::optional<std::string> model;  // of sessions whose log names none (else the price table's default)
  // The model's hard limit, in the replay meter's tokens: this, else the session's model's
  // context window in the price table (200,000 when it has none).
  std::optional<std::uint64_t> window;
  std::uint64_t jobs = 1;             // threads
  std::uint64_t shard = 0, shards = 1;  // replay the files whose index is `shard` modulo `shards`
};

// The session files below `corpus` (*.json, *.jsonl, *.traj), in path order; an error naming the
// folder when there is none.
Expected<std::vector<std::string>> corpus_files(const std::string& corpus);

// Replays this shard's share of `files` (from corpus_files) through every config, with progress on
// stderr. Sessions that cannot be imported, or that the API would refuse as they are, are
// skipped. The one error: a pipeline that cannot be built (a plugin failure). Results sorted.
Expected<BenchResults> run_corpus(const CorpusRun& run, const std::vector<std::string>& files);

// The --out folders of shards, read back as one set of results: every folder ran the same configs,
// and holds no session × config an earlier one holds. Results sorted.
Expected<BenchResults> merge_outputs(const std::vector<std::string>& dirs);

}  // namespace compactor::bench
