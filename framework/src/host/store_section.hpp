// `store:`: where continuity state and archived blobs live, the archive folder (the default) or a
// Redis server, read and validated without loading any plugin (restore, mcp and archive gc read
// it alone).
#pragma once

#include "host/yaml_reader.hpp"
#include "archive/store_config.hpp"

#include <string>

namespace compactor::detail {

// `store: {kind, url, username, password_env, tls, prefix, timeout_ms, state_ttl_s, superseded_ttl_s,
// state_secret_file, state_secret_env}`.
void read_store_section(YamlReader& r, const YAML::Node& root, StoreConfig& config);

void print_store_section(std::string& out, const StoreConfig& store);

}  // namespace compactor::detail
