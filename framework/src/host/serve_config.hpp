// `serve:` (compactor serve): where it listens, where each API's requests go, who may call it,
// and its limits. Read and validated with the rest of the config (located errors); other
// commands ignore it. The API names of `upstreams` are the wire formats' (checked by serve,
// which knows them, with the locations kept here).
#pragma once

#include "host/source_location.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace compactor {
namespace detail {
class YamlReader;
}

// A client serve issued a token to: its name is its tenant (serve/tenant.hpp). A name may have two
// entries while its token is rotated (the new one added, the old removed once out of use).
struct ServeClient {
  std::string name;          // [a-z0-9][a-z0-9_-]{0,63}
  std::string token_sha256;  // 64 lowercase hex digits
};

struct UpstreamEntry {
  std::string api;  // a wire format's upstream key: anthropic, openai, gemini, …
  std::string url;  // http:// or https://
  SourceLocation location;
};

struct ServeConfig {
  std::string listen = "127.0.0.1:8088";  // HOST:PORT or [IPV6]:PORT; loopback by default
  std::vector<UpstreamEntry> upstreams;    // `upstreams: {api: url}`; an API not named goes to its provider
  std::vector<ServeClient> clients;        // none: tenants by API key
  std::int64_t max_body_bytes = std::int64_t{32} << 20;  // a larger request body is answered 413 unread
  std::int64_t workers = 0;                 // pipelines that run at once; 0: one per core
  std::int64_t max_queued = 1024;           // requests waiting for a pipeline; more: 529/503 before the body
  std::int64_t queue_timeout_ms = 60000;    // a request waiting longer is forwarded uncompacted
  std::int64_t request_timeout_ms = 600000; // the pipeline's time, and the upstream's to its answer's head
  std::int64_t header_timeout_ms = 60000;   // a request's head (and an idle keep-alive connection)
  std::int64_t body_timeout_ms = 60000;     // a request's body
  std::int64_t upstream_stall_ms = 300000;  // the upstream sends nothing for this long: the call ends
  std::int64_t io_threads = 0;              // 0: two (every stream shares them)
  std::int64_t max_connections = 0;         // 0: what the file-descriptor limit allows (two per stream)
  std::string ca_file;                      // trust this CA bundle for the upstreams (resolved)
  bool reject_on_failure = false;           // `on_failure: reject` (else `forward`: fail open)
  std::string mcp_token_env;                // the variable holding /mcp's bearer token
  std::string metrics_token_env;            // the variable holding /metrics' bearer token
  // Requests reach serve through a reverse proxy (a TLS front): none is local, whatever its Host,
  // so /mcp needs a credential (clients or mcp_token_env), which validation requires.
  bool fronted = false;
  // What one tenant's namespace may hold (blobs and continuity state); past it, a call is
  // forwarded as it came (its archive) or its state is not kept: never refused.
  std::int64_t tenant_max_bytes = std::int64_t{4} << 30;
  // An API key's tenant stores only here, shared by every key no upstream answer has vouched for
  // yet (a 2xx), until its first 2xx; what is still unvouched after unverified_ttl_s is dropped.
  std::int64_t unverified_max_bytes = std::int64_t{64} << 20;
  std::int64_t unverified_ttl_s = 3600;

  // The configured URL of an API, or empty.
  std::string upstream_of(std::string_view api) const;
};

// Reads `serve:` (a mapping, already known to be one) into `out`; errors go to the reader,
// warnings (one located line each) to `warnings`. `base`: the config's folder.
void read_serve_config(detail::YamlReader& r, const YAML::Node& serve, const std::string& base, ServeConfig& out,
                       std::vector<std::string>& warnings);

// The section as print-pipeline writes it (feeds back to the same config).
void print_serve_config(std::string& out, const ServeConfig& s);

// What differs between two texts of one config, by name, for the line a reload writes: each
// top-level section (`budget`, `pipeline`…) and, within `serve` and `store`, each key on its own
// (`serve.clients`, `store.url`). Values are never named: they may hold a token's hash, and a
// reformatted section that means the same is no change. "the whole file" when one text is no
// YAML mapping.
std::vector<std::string> changed_settings(const std::string& before, const std::string& after);

}  // namespace compactor
