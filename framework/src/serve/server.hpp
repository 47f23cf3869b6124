// `compactor serve`: an HTTP proxy in front of the model API that compacts each request's
// conversation with the config's pipeline before forwarding it (docs/serve.md). Connections are
// asynchronous on a few I/O threads (serve/http_session.hpp), each with its own warm upstream
// connections (serve/upstream_pool.hpp); every request a wire format handles
// (wire/wire_format.hpp) has its compaction run by a worker process (serve/zygote.hpp),
// queued for one (serve/pipeline_queue.hpp); everything else is passed through.
#pragma once

#include "serve/deployment.hpp"

namespace compactor::serve {

// Runs until SIGTERM or SIGINT (then drains in-flight requests); returns the exit code:
// 0 after a drain, 1 when requests were cut at the time limit, 2 for a bad config or listen
// address, 3 when the pipeline cannot be built.
int run_server(const ServeOptions& options);

}  // namespace compactor::serve
