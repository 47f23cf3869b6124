#include "archive/store_config.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace compactor {

Expected<std::vector<std::string>> read_state_secrets(const StoreConfig& config) {
  std::string text, where;
  if (!config.state_secret_file.empty()) {
    where = "store.state_secret_file (" + config.state_secret_file + ")";
    std::ifstream in(config.state_secret_file, std::ios::binary);
    std::ostringstream all;
    if (!in || !(all << in.rdbuf())) return Error{where + ": cannot be read"};
    text = all.str();
  } else if (!config.state_secret_env.empty()) {
    where = "store.state_secret_env (" + config.state_secret_env + ")";
    const char* value = std::getenv(config.state_secret_env.c_str());
    if (value == nullptr) return Error{where + ": the variable is not set"};
    text = value;
  } else {
    return Error{"no store.state_secret_file or store.state_secret_env"};
  }
  std::vector<std::string> secrets;
  std::istringstream words(text);
  for (std::string word; words >> word;) secrets.push_back(word);
  if (secrets.empty() || secrets.size() > 2)
    return Error{where + ": expected one secret, or two (the new one first) during a rotation, got " + std::to_string(secrets.size())};
  for (const std::string& secret : secrets)
    if (secret.size() < 16) return Error{where + ": a secret of " + std::to_string(secret.size()) + " characters; at least 16 are needed"};
  return secrets;
}

bool is_tenant_id(const std::string& tenant) {
  if (tenant.empty() || tenant.size() > 64) return false;
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_or_digit(tenant.front())) return false;
  for (char c : tenant)
    if (!lower_or_digit(c) && c != '_' && c != '-') return false;
  return true;
}

}  // namespace compactor
