// `store:` in a config: where continuity state and archived blobs live. `folder` (the default) is
// archive.dir on this machine; `redis` is a Redis 7 server (or cluster) that replicas on machines
// sharing no disk reach alike (store/store.hpp has the layouts).
#pragma once

#include "compactor/error.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace compactor {

struct StoreConfig {
  enum class Kind { folder, redis } kind = Kind::folder;
  // redis: the server, from `url` (redis://HOST:PORT/DB, or unix:///PATH?db=DB).
  std::string url;
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string socket;  // a unix socket instead of host:port
  int db = 0;
  std::string username;      // Redis ACL user (AUTH user password); empty: the default user
  std::string password_env;  // the environment variable holding the password; never logged
  std::string prefix = "compactor";  // every key starts with {prefix…}: one Redis for several deployments
  std::int64_t timeout_ms = 500;     // connect, and each command's reply
  std::int64_t state_ttl_s = 7 * 24 * 3600;  // continuity state expires this long after it was written
  std::int64_t superseded_ttl_s = 3600;      // and this long after a later call continued from it
  // What serve signs the continuity state it keeps in Redis with (HMAC-SHA256), so that whoever
  // can write Redis cannot plant a history: a file (absolute once read) or a variable, holding
  // one secret, or two separated by white space during a rotation (the first signs, either
  // verifies). Named here, never held, printed or logged.
  std::string state_secret_file;
  std::string state_secret_env;
};

// The secrets `config` names, read now: one or two, each at least 16 characters; an error names
// the setting and what is wrong, never a secret.
Expected<std::vector<std::string>> read_state_secrets(const StoreConfig& config);

// A tenant: the namespace of one client's state and archive. Empty is the default namespace;
// otherwise [a-z0-9][a-z0-9_-]{0,63} (a configured client's name, or key-<16 hex>).
bool is_tenant_id(const std::string& tenant);

}  // namespace compactor
