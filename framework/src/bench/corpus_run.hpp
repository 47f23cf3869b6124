// A bench over a folder of sessions: each session of this shard imported, checked as the API
// would, and replayed call by call through every pipeline (bench/replay.hpp) on a number of
// threads; and the merge of the --out folders of shards into one set of results. The threads and
// the shards change nothing in the results.
#pragma once

#include "bench/results.hpp"

#include "compactor/error.hpp"
#include "compactor/meter.hpp"
#include "host/pipeline_config.hpp"
#include "pricing/price_table.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace compactor::bench {

// The meters a replay may count with besides the configs' own, made once and shared by every
// thread.
struct BenchMeters {
  std::map<std::string, std::shared_ptr<const Meter>> by_name;  // "o200k", "calibrated/sonnet"…
  std::string default_family;                                   // the calibrated fit's
};

// The meters of `kind` when it is given (a calibrated one per family of the fit in `fit_path`),
// else calibrated and o200k, the defaults of messages-array and Claude Code sessions and of
// OpenAI ones. None when no kind is given and every config counts tokens with its own meter.
Expected<BenchMeters> make_bench_meters(const std::optional<std::string>& kind, const std::string& fit_path,
                                        const std::vector<PipelineConfig>& configs);

struct CorpusRun {
  std::string corpus;                  // the folder; sessions are named relative to it
  std::vector<PipelineConfig> configs;  // loaded: each thread builds its own pipelines from them
  const PriceTable* prices = nullptr;
  const BenchMeters* meters = nullptr;
  // The meter of every replay; when absent, a config's own meter when its budget is in tokens,
  // else calibrated (the price's family, or the fit's default) or o200k for OpenAI sessions.
  std::optional<std::string> meter_kind;
  std::optional<std::string> model;  // of sessions whose log names none (else the price table's default)
  std::uint64_t window = 200000;      // the model's hard limit, in the replay meter's tokens
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
