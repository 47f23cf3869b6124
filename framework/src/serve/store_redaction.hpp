// What a client may read of an error serve passes on from its store: never where the store is.
// A store's errors name it for the operator's log ("redis://10.0.0.5:6379/0 (tenant alice): no
// blob …", "cannot write /var/lib/compactor/archive/…"); what reaches a client (an /mcp tool's
// error, an x-compactor-warning, a refusal's body) shows the Redis address as `<store>` and the
// archive folder as `<archive>`, so a client learns neither the network's layout nor a host's.
#pragma once

#include "archive/store_config.hpp"

#include <string>

namespace compactor::serve {

class StoreRedaction {
 public:
  StoreRedaction() = default;
  // `archive_dir` absolute: the folder serve archives to (the folder store's, and where a Redis
  // store's run writes nothing but temporary files).
  StoreRedaction(const StoreConfig& store, std::string archive_dir);

  // `text` with every store address and the archive folder replaced: the config's Redis address
  // as the store names itself, its socket, and any redis://, rediss:// or unix:// URL (a cluster's
  // other nodes, a password written in a URL) up to the next space, quote or bracket.
  std::string operator()(std::string text) const;

 private:
  std::string archive_dir_, socket_, address_;  // address_: host:port, as the store's where() writes it
};

}  // namespace compactor::serve
