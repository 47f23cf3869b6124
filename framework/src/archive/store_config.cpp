#include "archive/store_config.hpp"

namespace compactor {

bool is_tenant_id(const std::string& tenant) {
  if (tenant.empty() || tenant.size() > 64) return false;
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_or_digit(tenant.front())) return false;
  for (char c : tenant)
    if (!lower_or_digit(c) && c != '_' && c != '-') return false;
  return true;
}

}  // namespace compactor
