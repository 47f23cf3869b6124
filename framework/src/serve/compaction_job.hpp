// What a worker does for one request: the wire format reads the body, the continuation rule
// picks the input (the history sent last time for the longest known prefix, plus what arrived
// since), the pipeline runs on it with the API's rules as checkers, and the compacted
// conversation is written back into the API's form with the client's breakpoints. The history
// sent is stored only once the body to forward exists.
#pragma once

#include "serve/continuity_store.hpp"
#include "serve/job_protocol.hpp"

#include "host/child_run.hpp"
#include "host/pipeline.hpp"
#include "wire/wire_format.hpp"

#include <string>

namespace compactor::serve {

struct CompactionResult {
  JobOutcome outcome;
  std::string body;  // what to forward when outcome.result is compacted (else the client's body)
};

// `store` is the tenant's: its state is read and written, and the run archives there.
// `model`, when given, is the model the request names outside its body (Gemini's URL); else the
// body's. `progress`, when given, hears each stage start and end (the server's time limit per stage).
CompactionResult run_compaction(Pipeline& pipeline, store::Store& store, const wire::WireFormat& format,
                                std::string body, bool prompt_too_long, ChildProgress* progress, StageLogger& log,
                                const std::string& model = "");

// `tenant`'s store as a worker opens it, after its fork: the config's store, under serve's bounds
// (serve.tenant_max_bytes; an API key's tenant in the unverified area until vouched for).
std::unique_ptr<store::Store> open_tenant_store(const PipelineConfig& config, const std::string& tenant);

// What the store did, into the outcome: its times, failures and refusals; a request that failed
// because its archive could not be stored (a failure, or a bound) is a store fault (forwarded as
// it came, never refused for it).
void report_store(JobOutcome& outcome, store::Store& store, std::string_view kind);

}  // namespace compactor::serve
