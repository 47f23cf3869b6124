// What one config gives the server: its settings, each API's upstream, the zygote its pipeline
// workers come from, and /mcp. A reload makes a new one; a request keeps the one it started with.
#pragma once

#include "serve/mcp_endpoint.hpp"
#include "serve/remembered_meter.hpp"
#include "serve/store_redaction.hpp"
#include "serve/zygote.hpp"

#include "host/listen_address.hpp"
#include "host/pipeline_config.hpp"
#include "wire/wire_format.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace compactor::serve {

struct ServeOptions {
  std::string config_file;
  std::optional<std::string> listen;            // overrides serve.listen
  std::map<std::string, std::string> upstreams;  // by API (anthropic, openai, gemini): override serve.upstreams
  std::string version;                          // the software's, for /mcp's serverInfo
};

struct Deployment {
  ServeSettings settings;
  ListenAddress listen;
  std::map<std::string, std::string, std::less<>> upstreams;  // every API's base URL, no trailing "/"
  std::shared_ptr<Zygote> zygote;
  std::shared_ptr<McpEndpoint> mcp;
  StoreRedaction redaction;  // what a client may read of the store's errors
  int generation = 1;        // 1 for the config serve started with, one more per accepted reload
  // The budget's meters, remembering their counts across calls (serve/fast_path.hpp); a meter
  // held here stays as long as the deployment's config that loaded it.
  std::shared_ptr<RememberedMeters> meters = std::make_shared<RememberedMeters>();

  const std::string& upstream_for(const wire::WireFormat& format) const;
  std::size_t workers() const;
};

struct LoadOutcome {
  std::shared_ptr<Deployment> deployment;
  std::vector<std::string> errors;
  int exit_code = 0;
};

// Reads and checks the config (no plugin is loaded here: the zygote loads and validates the
// pipeline), then starts the zygote.
LoadOutcome load_deployment(const ServeOptions& options);

}  // namespace compactor::serve
