// What a stage needs to know of a tool call to treat its result by policy: whether its tool is
// named in a list of patterns (a stage param: `"Bash shell exec_command run_shell_command mcp__*"`),
// which file it reads or writes, and which command it runs. The names are each agent's own
// (Claude Code's Read/Edit/Bash, Codex's shell/apply_patch, Gemini CLI's and Qwen Code's
// read_file/replace/run_shell_command, MCP tools' mcp__server__tool), so a config lists them; the
// input keys are read whatever the tool, so a new agent's tools work when its keys are the usual.
// Header-only: a stage links nothing more for it.
#pragma once

#include "compactor/block.hpp"

#include <boost/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace compactor {

// Space-separated tool names; a name ending in `*` matches every name it starts (`mcp__*`).
class ToolNames {
 public:
  ToolNames() = default;
  explicit ToolNames(std::string_view list) {
    std::size_t at = 0;
    while (at < list.size()) {
      const std::size_t start = list.find_first_not_of(" \t\n,", at);
      if (start == std::string_view::npos) break;
      const std::size_t end = std::min(list.size(), list.find_first_of(" \t\n,", start));
      names_.emplace_back(list.substr(start, end - start));
      at = end;
    }
  }
  bool contains(std::string_view name) const {
    for (const std::string& n : names_)
      if (n.ends_with('*') ? name.starts_with(std::string_view(n).substr(0, n.size() - 1)) : name == n) return true;
    return false;
  }
  bool empty() const { return names_.empty(); }

 private:
  std::vector<std::string> names_;
};

// A string field of a tool_use's input object, or empty.
inline std::string_view input_string(const Block& call, std::string_view key) {
  const boost::json::value* input = call.input();
  if (input == nullptr || !input->is_object()) return {};
  const boost::json::value* v = input->get_object().if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

// The one file a call reads or writes, by the keys agents use for it (file_path: Claude Code;
// absolute_path, file_path: Gemini CLI and Qwen Code; path: many MCP servers), or empty.
inline std::string_view file_of(const Block& call) {
  for (const char* key : {"file_path", "absolute_path", "notebook_path", "path", "filePath"})
    if (std::string_view v = input_string(call, key); !v.empty()) return v;
  return {};
}

// The files a Codex apply_patch writes: the paths after `*** Update File: `, `*** Add File: ` and
// `*** Delete File: ` in its patch (the input's `input` or `patch` string, or the call's raw input).
inline std::vector<std::string> files_patched(const Block& call) {
  std::string_view patch = input_string(call, "input");
  if (patch.empty()) patch = input_string(call, "patch");
  std::vector<std::string> files;
  for (std::string_view head : {"*** Update File: ", "*** Add File: ", "*** Delete File: "})
    for (std::size_t at = patch.find(head); at != std::string_view::npos; at = patch.find(head, at + head.size())) {
      const std::size_t start = at + head.size();
      std::size_t end = patch.find('\n', start);
      if (end == std::string_view::npos) end = patch.size();
      files.emplace_back(patch.substr(start, end - start));
    }
  return files;
}

}  // namespace compactor
