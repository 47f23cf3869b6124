// A call no stage can act on goes out without a pipeline worker. The server reads the body, resumes
// the conversation from its continuity state and asks the triage (host/call_triage.hpp: the
// budget's trigger measured as the run measures it, and what each loaded stage declared it acts
// on) whether any stage could change the input; when none could, it forwards what the worker
// would have forwarded (the request as it came, or the stored compacted history plus what arrived
// since) and stores the state as the worker would, with no fork. Only the host's own code runs
// here (the reader, the API's rules, the meter, the store): a plugin never runs in the server.
#pragma once

#include "serve/deployment.hpp"
#include "serve/zygote.hpp"

#include "wire/wire_format.hpp"

#include <optional>
#include <string>

namespace compactor::serve {

// The call's result when it needs no worker (JobRun::path "fast"); nothing, with `why` (the
// triage's reason, or what sends it to the worker), when it does. `model`: the one the request
// names outside its body (Gemini's URL), else empty. Never throws for what a client sends.
std::optional<JobRun> run_without_worker(const Deployment& deployment, const wire::WireFormat& format, const std::string& body,
                                         const std::string& tenant, const std::string& model, std::string& why);

}  // namespace compactor::serve
