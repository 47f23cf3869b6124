// The `redis` store: one tenant's state and blobs on a Redis 7 server, shared by every replica
// that names it. Keys (every one of a tenant under one hash tag, so that a Redis Cluster keeps a
// tenant on one node and a call's keys in one slot):
//
//   {<prefix>}:b:<64 hex>          a blob, the exact bytes its receipt hashes; written once (SET NX)
//   {<prefix>}:blobs               sorted set: each blob's hex by the time it was last put (gc's index)
//   {<prefix>}:s:<64 hex>          continuity state for a prefix, signed with store.state_secret_* (HMAC-SHA256 over
//                                  the key and the value: one that does not verify is a miss); expires
//                                  store.state_ttl_s after it was written
//   {<prefix>}:bytes               what the namespace holds (blobs, live state), for serve.tenant_max_bytes
//   {<prefix>}:states, :state_sizes each state's expiry (sorted set) and size (hash): expired ones leave the count
//   {<prefix>:key-…}:known         an API key's tenant an upstream's 2xx vouched for
//   {<prefix>:key-…}:pending       an unverified tenant's blobs (they expire after serve.unverified_ttl_s)
//   {<prefix>}:unverified, :unverified:bytes, :unverified:total   the area every unverified tenant shares
//
// with {<prefix>:<tenant>} in place of {<prefix>} for a tenant. A run's blobs are spooled to a
// private temporary folder as the folder store writes them (so a stage's checks read them back,
// and what a declined stage put is taken back for nothing) and shipped at commit, before any
// output can name their receipts: a blob that is not stored is never named.
#pragma once

#include "store/redis_client.hpp"
#include "store/store.hpp"

namespace compactor::store {

class RedisStore final : public Store {
 public:
  RedisStore(const StoreConfig& config, const std::string& tenant);

  std::string where() const override;
  std::unique_ptr<RunArchive> open_run(FileSystem& fs) override;
  Expected<std::string> restore(std::string_view receipt) override;
  Expected<std::optional<StoredState>> longest_state(const std::vector<std::string>& keys, std::size_t count) override;
  Expected<bool> put_state(const std::string& key, std::string_view bytes, const std::string& supersedes = "") override;
  Expected<ArchiveGcResult> collect_garbage(std::chrono::hours keep, bool dry_run = false) override;
  Expected<bool> take_lease(const std::string& key, std::int64_t ttl_ms) override;
  void release_lease(const std::string& key) override;
  Expected<bool> unverified() override;

  // Vouching (store.hpp vouch_for): the tenant's pending blobs are its own for good, it is known
  // ({tag}:known), and its entry leaves the unverified area.
  Expected<bool> vouch();

  // The tenants with a gc index under config.prefix (SCAN of the node the URL names).
  static Expected<std::vector<std::string>> tenants(const StoreConfig& config);

  // Stores `blobs` (receipt, bytes) and marks them in the index, in one round trip.
  Expected<bool> put_blobs(const std::vector<std::pair<std::string, std::string>>& blobs);

  // The key of a blob, state, or the index (for tests and docs).
  std::string blob_key(std::string_view hex) const { return tag_ + ":b:" + std::string(hex); }
  std::string state_key(std::string_view key) const { return tag_ + ":s:" + std::string(key); }
  std::string index_key() const { return tag_ + ":blobs"; }

 private:
  Expected<ArchiveGcResult> listed_garbage(const std::string& cutoff);
  // The secrets state is signed with (store.state_secret_*), read once.
  const Expected<std::vector<std::string>>& secrets();
  Expected<std::optional<StoredState>> lookup(const std::vector<std::string>& keys, std::size_t count);
  // What an unverified tenant's write takes from the shared area ({<prefix>}:unverified…).
  Expected<bool> reserve_unverified(std::int64_t bytes);
  Expected<std::int64_t> admit(std::int64_t bytes, const std::string& what);

  StoreConfig config_;
  std::string tenant_;
  std::optional<bool> unverified_;
  std::optional<Expected<std::vector<std::string>>> secrets_;
  std::string tag_;  // {<prefix>} or {<prefix>:<tenant>}
  RedisClient client_;
};

}  // namespace compactor::store
