#include "serve/outcome_headers.hpp"

#include <string>

namespace compactor::serve {

std::string receipts_header(const JobOutcome& o) {
  std::string out;
  std::size_t listed = 0;
  for (const auto& r : o.receipts) {
    if (out.size() + r.size() + 1 > kMaxReceiptsHeader - 8) break;  // room left for ",+N"
    out += (out.empty() ? "" : ",") + r;
    ++listed;
  }
  if (o.receipt_count > listed) out += (out.empty() ? "+" : ",+") + std::to_string(o.receipt_count - listed);
  return out;
}

void add_outcome_headers(const JobOutcome& o, Headers& headers) {
  headers.emplace_back("x-compactor-status", std::string(o.status_header()));
  if (o.result != JobOutcome::compacted && o.result != JobOutcome::unchanged) return;
  headers.emplace_back("x-compactor-size-before", std::to_string(o.size_received));
  headers.emplace_back("x-compactor-size-after", std::to_string(o.size_out));
  headers.emplace_back("x-compactor-size-unit", o.unit);
  if (std::string receipts = receipts_header(o); !receipts.empty()) headers.emplace_back("x-compactor-receipts", std::move(receipts));
}

}  // namespace compactor::serve
