#include "serve/operator_ledger.hpp"

namespace compactor::serve {

void OperatorLedger::know(const std::string& tenant) {
  std::lock_guard lock(mutex_);
  tenants_.try_emplace(tenant);
}

void OperatorLedger::record(const std::string& tenant, const JobOutcome& o, std::int64_t unix_ms) {
  const bool ran = o.result == JobOutcome::compacted || o.result == JobOutcome::unchanged;
  std::lock_guard lock(mutex_);
  Tenant& t = tenants_[tenant];
  ++t.calls;
  if (ran) {
    t.saved_tokens += o.saved_tokens;
    t.saved_usd += o.saved_usd;
  }
  if (o.store.usage_bytes >= 0 && !o.store.unverified) t.store_bytes = o.store.usage_bytes;
  if (!o.store.kind.empty()) {
    const int errors = o.store.state_get_errors + o.store.state_put_errors + o.store.blob_errors;
    store_ = Store{o.store.kind, unix_ms, errors > 0 || o.store_fault, o.store.error};
  }
  if (!ran || !o.changed) return;
  ++t.compactions;
  recent_.push_front(Compaction{unix_ms, tenant, o.unit, o.size_received, o.size_out, o.receipts, o.receipt_count});
  if (recent_.size() > kRecent) recent_.pop_back();
}

OperatorLedger::Snapshot OperatorLedger::snapshot() const {
  std::lock_guard lock(mutex_);
  return Snapshot{tenants_, std::vector<Compaction>(recent_.begin(), recent_.end()), store_};
}

}  // namespace compactor::serve
