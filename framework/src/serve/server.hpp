// `compactor serve`: an HTTP proxy in front of the model API that compacts each request's
// conversation with the config's pipeline before forwarding it (docs/serve.md). Connections are
// a thread each; every request a wire format handles (serve/../wire/wire_format.hpp) has its
// compaction run by a worker (serve/zygote.hpp); everything else is passed through.
#pragma once

#include <optional>
#include <string>

namespace compactor::serve {

struct ServeOptions {
  std::string config_file;
  std::optional<std::string> listen;           // overrides serve.listen
  std::optional<std::string> upstream;         // overrides serve.upstream
  std::optional<std::string> openai_upstream;  // overrides serve.openai_upstream
  std::optional<std::string> gemini_upstream;  // overrides serve.gemini_upstream
  std::string version;                         // the software's, for /mcp's serverInfo
};

// Runs until SIGTERM or SIGINT (then drains in-flight requests); returns the exit code:
// 0 after a drain, 1 when requests were cut at the time limit, 2 for a bad config or listen
// address, 3 when the pipeline cannot be built.
int run_server(const ServeOptions& options);

}  // namespace compactor::serve
