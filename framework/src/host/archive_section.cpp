#include "host/archive_section.hpp"

#include "host/yaml_writer.hpp"
#include "model/conversation_reader.hpp"

#include <filesystem>

namespace compactor {

namespace fs = std::filesystem;

namespace detail {

SourceLocation read_archive_section(ConfigContext& c, const YAML::Node& root) {
  SourceLocation dir_at;
  auto archive = c.r.member(root, "", "archive", false);
  if (!archive || !c.r.check_mapping(*archive, "archive", {"dir", "restore_via"})) return dir_at;
  if (auto d = c.r.member(*archive, "archive", "dir", true))
    if (auto s = c.r.string(*d, "archive.dir")) {
      c.config.archive_dir = *s;
      dir_at = c.r.location(*d);
    }
  if (auto v = c.r.member(*archive, "archive", "restore_via", false))
    if (auto s = c.r.string(*v, "archive.restore_via")) {
      if (auto problem = restore_via_problem(*s)) c.r.error(*v, "archive.restore_via", *problem);
      else c.config.restore_via = *s;
    }
  return dir_at;
}

void print_archive_section(std::string& out, const PipelineConfig& c) {
  out += "archive:\n  dir: " + quoted(c.archive_dir) + "\n";
  if (c.restore_via != "cli") out += "  restore_via: " + quoted(c.restore_via) + "\n";  // cli, the default, goes unsaid
}

}  // namespace detail

using detail::YamlReader;

Expected<std::string> config_archive_dir(const std::string& file) {
  auto text = read_input_bytes(file);
  if (!text) return text.error();
  YamlReader r(file);
  std::string dir = PipelineConfig{}.archive_dir;
  try {
    YAML::Node root = YAML::Load(*text);
    if (!root.IsMap()) return Error{file + ":1:1: expected a mapping with version: 1, got " + YamlReader::describe(root)};
    if (auto archive = r.member(root, "", "archive", false); archive && r.check_mapping(*archive, "archive", {"dir", "restore_via"}))
      if (auto d = r.member(*archive, "archive", "dir", true))
        if (auto s = r.string(*d, "archive.dir")) dir = *s;
  } catch (const YAML::Exception& e) {
    return Error{file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                 ": YAML syntax error: " + e.msg};
  }
  if (!r.errors().empty()) return Error{r.errors().front()};
  return dir;
}

std::optional<std::string> restore_via_problem(std::string_view value) {
  if (value == "cli" || value == "mcp") return std::nullopt;
  const std::string got = "got \"" + std::string(value) + "\"";
  if (value.find("{receipt}") == std::string_view::npos)
    return "expected cli, mcp, or a phrase holding {receipt} (how the model restores a receipt), " + got;
  for (char c : value)
    if (static_cast<unsigned char>(c) < 0x20) return "expected a phrase on one line, without control characters";
  if (count_code_points(value) > kMaxRestorePhraseChars)
    return "expected a phrase of at most " + std::to_string(kMaxRestorePhraseChars) + " chars, got " +
           std::to_string(count_code_points(value));
  return std::nullopt;
}

std::string restore_phrase(const PipelineConfig& c, const std::string& tenant) {
  if (c.restore_via == "mcp") return "the `restore` tool of the `compactor` MCP server with the receipt {receipt}";
  if (c.restore_via != "cli") return c.restore_via;
  const bool redis = c.store.kind == StoreConfig::Kind::redis;
  // A tenant's receipts are found in its namespace only (its id is a name, not a secret).
  const std::string in_tenant = tenant.empty() ? "" : " --tenant " + tenant;
  if (!redis && c.archive_dir == PipelineConfig{}.archive_dir) return "`compactor restore {receipt}" + in_tenant + "`";
  // Quoted for a shell when it holds anything but a path's usual characters. A Redis store is
  // reached through the config that names it, from any folder.
  std::error_code ec;
  std::string dir = redis ? fs::absolute(c.file, ec).lexically_normal().string() : c.archive_dir;
  if (dir.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+@%=:,") != std::string::npos) {
    std::string quoted_dir = "'";
    for (char ch : dir) quoted_dir += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    dir = quoted_dir + "'";
  }
  return "`compactor restore {receipt} " + std::string(redis ? "--config " : "--archive ") + dir + in_tenant + "`";
}

}  // namespace compactor
