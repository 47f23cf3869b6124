// Token counts remembered across calls, in the server. An agent sends its whole history on every
// call, so all but its newest messages were counted on an earlier one; counting them again with a
// tokenizer was most of what a call below the trigger cost (about 1 ms for a 95 KB history). A
// remembered meter gives the run's meter's own count for each message, and for each long text
// (the system prompt, the tools), remembered by the SHA-256 of its bytes: the sizes and the
// trigger are exactly what a worker's run measures.
#pragma once

#include "compactor/meter.hpp"

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace compactor::serve {

class RememberedMeters {
 public:
  // The remembering meter for `meter` (null stays null); one per meter, for the deployment's life.
  std::shared_ptr<const Meter> of(const std::shared_ptr<const Meter>& meter);

 private:
  std::mutex mutex_;
  std::map<const Meter*, std::shared_ptr<const Meter>> meters_;
};

}  // namespace compactor::serve
