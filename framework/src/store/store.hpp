// Where one tenant's continuity state and archived blobs live: the archive folder on this machine
// (`folder`, the default) or a Redis server that replicas on machines sharing no disk all reach
// (`redis`). Everything that reads or writes either goes through this interface: a run's archive
// (the pipeline's puts, made durable at commit), restore by receipt (`compactor restore`,
// `compactor mcp`, serve's /mcp), the continuity state serve keeps per conversation, and
// `archive gc`.
//
// A store is one tenant's namespace and nothing outside it: the folder's is archive.dir (the
// default tenant) or archive.dir/tenants/<tenant>; Redis's is every key under the hash tag
// {<prefix>} or {<prefix>:<tenant>}. No call takes a name that reaches another namespace: a
// receipt, a state key and a tenant id are all checked before they become a path or a key.
//
// Failures are values and are counted (counters()): a caller that can go on without the store
// (serve: a state miss, a forwarded original) does, and says so once.
#pragma once

#include "archive/archive_gc.hpp"
#include "archive/file_system.hpp"
#include "archive/run_archive.hpp"
#include "archive/store_config.hpp"
#include "compactor/error.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::store {

// A stored history for the longest known prefix: keys[covered - 1] named it.
struct StoredState {
  std::size_t covered = 0;
  std::string bytes;
  std::int64_t written_at_ms = 0;  // when it was stored (ms since the epoch; 0: not known)
};

// What the store did for one process (serve's worker reports it in its JobOutcome).
struct StoreCounters {
  std::int64_t state_get_us = -1, state_put_us = -1, blobs_put_us = -1;  // -1: not done
  int state_get_errors = 0, state_put_errors = 0, blob_errors = 0;
  std::string first_error;       // one line, what and where
  std::string first_blob_error;  // the same for blobs: why a run that removes nothing was forwarded
  // Writes refused by a bound (TenantBounds), not failed: the tenant's or the unverified area's.
  int over_tenant_bound = 0, over_unverified_bound = 0;
  std::int64_t usage_bytes = -1;  // what the namespace holds after this process's writes (-1: not known)
  bool unverified = false;        // it wrote as an API key no upstream answer has vouched for yet
  int state_rejected = 0;         // stored states that did not verify (signed by no secret of ours): misses
};

// What serve lets one namespace keep (serve.tenant_max_bytes, unverified_max_bytes,
// unverified_ttl_s). A tenant serve knows only by the API key it forwards (`key-…`) is unverified
// until the upstream answered one of its calls with a 2xx (vouch_for): until then its writes are
// charged to a small area shared by every unverified key, bounded in bytes, and what is still
// unvouched after its time is dropped, so the refused calls of strangers never fill the store.
// A write over a bound is refused as a value: a run that cannot archive is forwarded as it came,
// a state not kept is a miss.
struct TenantBounds {
  std::int64_t tenant_bytes = 0;      // 0: unbounded (the command line's own runs)
  bool by_upstream = false;           // an API key's tenant: unverified until vouched for
  std::int64_t unverified_bytes = 0;  // the shared area, every unverified key together
  std::int64_t unverified_ttl_s = 3600;
};

// Whether `tenant` is an API key's (`key-` and 16 hex digits: serve/tenant.hpp), which only an
// upstream's 2xx vouches for; a client's name never starts so (serve.clients refuses it).
bool is_key_tenant(std::string_view tenant);

class Store {
 public:
  virtual ~Store() = default;

  // "the archive folder /srv/a", "redis://10.0.0.5:6379/0 (tenant alice)": for messages.
  virtual std::string where() const = 0;
  // One run's archive; the folder's writes through `fs` (tests inject faults there).
  virtual std::unique_ptr<RunArchive> open_run(FileSystem& fs) = 0;
  // The bytes archived under `receipt` in this namespace, verified against it.
  virtual Expected<std::string> restore(std::string_view receipt) = 0;
  // The state stored for the longest of `keys` (keys[i] names a prefix of i+1 messages; each
  // 64 lowercase hex digits); nothing on a miss, an error when the store could not answer.
  virtual Expected<std::optional<StoredState>> longest_state(const std::vector<std::string>& keys, std::size_t count) = 0;
  // `supersedes`, when not empty, names the state this one continues: a store that keeps state
  // with a lifetime shortens that one's (only a rewind to it still needs it).
  virtual Expected<bool> put_state(const std::string& key, std::string_view bytes, const std::string& supersedes = "") = 0;
  // A lease on `key` (a state key) for `ttl_ms`: true when this caller took it (nobody held it, or
  // its holder's time had passed), false while another holds it. Two replicas that both would
  // start one background summary: one does. Time is the wall clock, which replicas share.
  virtual Expected<bool> take_lease(const std::string& key, std::int64_t ttl_ms) = 0;
  // The holder is done: the next taker need not wait for its time to pass.
  virtual void release_lease(const std::string& key) = 0;
  // Removes what was written more than `keep` ago (blobs, and state the store does not expire);
  // `dry_run`: removes nothing, and lists what it would.
  virtual Expected<ArchiveGcResult> collect_garbage(std::chrono::hours keep, bool dry_run = false) = 0;

  // The bounds writes are admitted under (serve's workers; nothing else is bounded).
  void bound(const TenantBounds& bounds) { bounds_ = bounds; }
  // Whether this is an API key's namespace that no 2xx has vouched for yet (asked of the store
  // once, then kept); false for every other, and an error when the store cannot say.
  virtual Expected<bool> unverified() = 0;

  StoreCounters& counters() { return counters_; }

 protected:
  void failed(int& counter, const std::string& what) {
    ++counter;
    if (counters_.first_error.empty()) counters_.first_error = what;
  }
  void failed_blobs(const std::string& what) {
    failed(counters_.blob_errors, what);
    if (counters_.first_blob_error.empty()) counters_.first_blob_error = what;
  }
  // A write refused by a bound: counted apart from failures, and the error says which bound.
  Error over_bound(bool unverified_area, const std::string& what) {
    ++(unverified_area ? counters_.over_unverified_bound : counters_.over_tenant_bound);
    if (counters_.first_blob_error.empty() && what.starts_with("archive")) counters_.first_blob_error = what;
    return Error{what};
  }
  StoreCounters counters_;
  TenantBounds bounds_;
};

// The store `config` names for `tenant` (empty: the default namespace). Opening connects to
// nothing: a Redis store connects at its first call, in the process that makes it (serve's
// workers each their own, after the fork). `archive_dir` is the folder store's root.
std::unique_ptr<Store> open_store(const StoreConfig& config, const std::string& archive_dir, const std::string& tenant);

// The tenants that have anything in the store `config` names (the folder's tenants/ folders, or
// Redis's gc indexes, found with SCAN on the node `url` names), sorted; an error when the store
// cannot be read.
Expected<std::vector<std::string>> list_tenants(const StoreConfig& config, const std::string& archive_dir);

// The folder of `tenant`'s archive under `archive_dir` (archive_dir itself for the default).
std::string tenant_folder(const std::string& archive_dir, const std::string& tenant);

// Removes the spool folders a process that is gone left behind (a Redis store's run spools its
// blobs in $TMPDIR/compactor-spool.<pid>.*): serve calls it for a worker it had to stop.
void remove_spools_of(pid_t pid);

// Whether `key` can name stored state: 64 lowercase hex digits (Continuation's prefix keys).
bool is_state_key(std::string_view key);

// An upstream answered a call of `tenant` (an API key's) with a 2xx: what it stored is kept as the
// tenant's own, out of the unverified area, and later calls are bounded as any tenant's.
Expected<bool> vouch_for(const StoreConfig& config, const std::string& archive_dir, const std::string& tenant);

}  // namespace compactor::store
