// What a response tells its client of the call's compaction, from the call's outcome (one place,
// whichever path produced it):
//   x-compactor-status       what this call did (JobOutcome::status_header)
//   x-compactor-size-before  the history the client sent, in the budget's unit
//   x-compactor-size-after   the history forwarded, in the same unit
//   x-compactor-size-unit    that unit: chars, bytes or tokens
//   x-compactor-receipts     the receipts this call archived, comma-separated, in order; at most
//                            kMaxReceiptsHeader characters, the rest counted in a last item "+N"
// The sizes and receipts only when the pipeline ran (compacted or unchanged).
#pragma once

#include "serve/job_protocol.hpp"
#include "serve/reply.hpp"

namespace compactor::serve {

inline constexpr std::size_t kMaxReceiptsHeader = 2048;  // 28 receipts; proxies take 4 to 8 KiB per header

void add_outcome_headers(const JobOutcome& outcome, Headers& headers);

// The x-compactor-receipts value (empty when the call archived nothing).
std::string receipts_header(const JobOutcome& outcome);

}  // namespace compactor::serve
