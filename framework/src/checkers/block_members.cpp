#include "checkers/block_members.hpp"

#include <utility>

namespace compactor {
namespace {

const std::vector<std::pair<std::string_view, std::vector<std::string_view>>>& table() {
  static const std::vector<std::pair<std::string_view, std::vector<std::string_view>>> members = {
      {"text", {"type", "text", "cache_control", "citations"}},
      {"image", {"type", "source", "cache_control"}},
      {"document", {"type", "source", "cache_control", "citations", "context", "title"}},
      {"tool_use", {"type", "id", "name", "input", "cache_control", "caller"}},
      {"tool_result", {"type", "tool_use_id", "content", "is_error", "cache_control"}},
      {"thinking", {"type", "thinking", "signature"}},
      {"redacted_thinking", {"type", "data"}},
  };
  return members;
}

}  // namespace

const std::vector<std::string_view>* api_block_members(std::string_view type) {
  for (const auto& [name, members] : table())
    if (name == type) return &members;
  return nullptr;
}

std::string block_members_rule(std::string_view type) {
  std::string out = "a " + std::string(type) + " block has only ";
  if (const auto* members = api_block_members(type))
    for (std::size_t i = 0; i < members->size(); ++i)
      out += (i == 0 ? "" : i + 1 == members->size() ? " and " : ", ") + std::string((*members)[i]);
  return out;
}

}  // namespace compactor
