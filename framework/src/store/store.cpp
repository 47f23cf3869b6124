#include "store/store.hpp"

#include "store/folder_bounds.hpp"
#include "store/folder_store.hpp"
#include "store/redis_store.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace compactor::store {

std::string tenant_folder(const std::string& archive_dir, const std::string& tenant) {
  return tenant.empty() ? archive_dir : archive_dir + "/tenants/" + tenant;
}

bool is_state_key(std::string_view key) {
  if (key.size() != 64) return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::unique_ptr<Store> open_store(const StoreConfig& config, const std::string& archive_dir, const std::string& tenant) {
  // A tenant id that is not one could reach outside its namespace ("../x", a hash tag's brace):
  // callers check it, and this refuses it anyway with a namespace nobody writes.
  const std::string checked = tenant.empty() || is_tenant_id(tenant) ? tenant : "invalid-tenant";
  if (config.kind == StoreConfig::Kind::redis) return std::make_unique<RedisStore>(config, checked);
  return std::make_unique<FolderStore>(tenant_folder(archive_dir, checked), archive_dir, checked);
}

bool is_key_tenant(std::string_view tenant) { return tenant.starts_with("key-"); }

Expected<bool> vouch_for(const StoreConfig& config, const std::string& archive_dir, const std::string& tenant) {
  if (!is_key_tenant(tenant) || !is_tenant_id(tenant)) return Error{"\"" + tenant + "\" is no API key's tenant"};
  if (config.kind == StoreConfig::Kind::redis) return RedisStore(config, tenant).vouch();
  return vouch_folder_tenant(archive_dir, tenant);
}

Expected<std::vector<std::string>> list_tenants(const StoreConfig& config, const std::string& archive_dir) {
  std::vector<std::string> out;
  if (config.kind == StoreConfig::Kind::redis) {
    auto found = RedisStore::tenants(config);
    if (!found) return found.error();
    out = std::move(*found);
  } else {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path folder = fs::path(archive_dir) / "tenants";
    if (fs::is_symlink(folder, ec)) return Error{folder.string() + ": is a symbolic link; tenants' archives are folders of their own"};
    for (const auto& e : fs::directory_iterator(folder, ec))
      if (e.is_directory(ec) && !e.is_symlink(ec) && is_tenant_id(e.path().filename().string())) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void remove_spools_of(pid_t pid) {
  namespace fs = std::filesystem;
  const char* tmp = std::getenv("TMPDIR");
  const std::string folder = tmp != nullptr && *tmp == '/' ? tmp : "/tmp";
  const std::string prefix = "compactor-spool." + std::to_string(pid) + ".";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(prefix) && e.is_directory(ec) && !e.is_symlink(ec)) fs::remove_all(e.path(), ec);
  }
}

}  // namespace compactor::store
