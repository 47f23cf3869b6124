// The archive one run writes through, as the host drives it: a stage puts what it removes, the
// host takes back what a stage whose candidate was not committed put (mark, revert_to), makes the
// rest durable before any output names a receipt (commit), or drops it (rollback). ArchiveStore is
// the archive folder's; a store beyond this machine (store/redis_store.hpp) spools a run's blobs
// and ships them at commit, so that a receipt is named only once its blob is stored.
#pragma once

#include "compactor/archive.hpp"
#include "compactor/error.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace compactor {

class RunArchive : public Archive {
 public:
  struct Mark {
    std::size_t pending = 0;
    std::size_t receipts = 0;
  };
  virtual Mark mark() const = 0;
  virtual void revert_to(Mark mark) = 0;
  // The receipts put since `mark` and kept, in the order they came (what a committed stage
  // archived, for the run report).
  virtual std::vector<std::string> receipts_since(Mark mark) const = 0;
  // Makes every blob of this run durable and visible; an error says what failed and where.
  virtual Expected<bool> commit() = 0;
  virtual void rollback() = 0;
};

}  // namespace compactor
