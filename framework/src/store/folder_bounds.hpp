// The folder store's bounds (store.hpp, TenantBounds), kept in the archive folder itself so that
// every process sharing it (workers, replicas on a shared file system) agrees:
//
//   <namespace>/usage            what the namespace holds, in bytes (packs, loose blobs, state
//                                files), changed under flock by each write; measured again when
//                                missing (archive gc removes it: what gc removed is not counted)
//   <archive>/unverified/<key-…> an API key's tenant no upstream answer has vouched for yet: a
//                                namespace of the same layout, outside tenants/
//
// An API key's tenant is known once its folder under tenants/ exists (a vouch makes it; one made
// before vouching existed is known too). Until then it reads and writes its folder in the
// unverified area, whose folders together hold at most unverified_bytes; one whose last write
// is unverified_ttl_s old is dropped. Charging, dropping and vouching (the folder moved under
// tenants/, or its files into the one there) hold the area's lock, so a folder being vouched for
// is never dropped, nor written half-moved.
#pragma once

#include "store/store.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace compactor::store {

// Adds `bytes` (negative: a file replaced by a smaller one) to the usage of the namespace folder
// `dir` when it stays within `max` (0: no bound): what the namespace holds after; nothing (and
// `why` set) when the bound refuses them; an error when the record cannot be kept.
Expected<std::optional<std::int64_t>> charge_usage(const std::string& dir, std::int64_t bytes, std::int64_t max, std::string& why);

// Forgets the usage record of `dir`: the next write measures the namespace again.
void forget_usage(const std::string& dir);

// <root>/unverified/<tenant>: where an unverified tenant's namespace is.
std::string unverified_folder(const std::string& root, const std::string& tenant);

// Whether `tenant`'s folder under tenants/ of `root` exists (a vouched or older tenant).
bool folder_tenant_known(const std::string& root, const std::string& tenant);

// Charges `bytes` to `tenant`'s folder in the unverified area of `root`, after dropping every
// folder past its time: true when charged; false (and `why` set) when the area is full; an error
// when the area cannot be kept.
Expected<bool> charge_unverified(const std::string& root, const std::string& tenant, std::int64_t bytes, const TenantBounds& bounds,
                                 std::string& why);

// Vouching in the folder: the tenant's unverified folder becomes its folder under tenants/ (moved
// whole, or its files moved into one another vouch made meanwhile); a tenant with nothing stored
// gets an empty one.
Expected<bool> vouch_folder_tenant(const std::string& root, const std::string& tenant);

}  // namespace compactor::store
