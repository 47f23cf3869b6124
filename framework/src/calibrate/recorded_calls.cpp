#include "calibrate/recorded_calls.hpp"

#include "import/importers.hpp"
#include "wire/anthropic/claude_code_log.hpp"
#include "model/conversation_reader.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <unistd.h>
#include <unordered_map>

namespace compactor::calibrate {

namespace {

namespace fs = std::filesystem;

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

std::string family_of(std::string_view model) {
  for (const char* f : {"opus", "sonnet", "haiku"})
    if (model.find(f) != std::string_view::npos) return f;
  return std::string(model);
}

std::optional<Session> read_session(const fs::path& path, const std::vector<std::shared_ptr<const Meter>>& meters,
                                    CallCounts& counts) {
  auto bytes = read_input_bytes(path.string());
  if (!bytes) {
    fmt::print(stderr, "compactor calibrate: {} (skipped)\n", bytes.error().message);
    ++counts.unreadable;
    return std::nullopt;
  }
  bool sidechain = path.filename().string().rfind("agent-", 0) == 0;
  ImportResult imported = import_claude_code(*bytes, path.string(), sidechain);
  std::vector<RecordedCall> recorded;
  for (RecordedCall& r : imported.recorded_calls) {
    ++counts.calls;
    if (r.model == "<synthetic>")
      ++counts.synthetic;
    else
      recorded.push_back(std::move(r));
  }
  if (recorded.empty()) return std::nullopt;
  if (!imported.conversation) {
    counts.not_in_chain += recorded.size();
    return std::nullopt;
  }
  const Conversation& c = *imported.conversation;
  // The assistant message each recorded call's response starts, by its first line.
  std::unordered_map<std::size_t, std::size_t> message_at_line;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c[i].role() == Role::assistant) message_at_line.emplace(imported.message_lines[i], i);

  // The first line the import skipped as broken or repaired: calls after it saw another prompt.
  std::size_t first_bad = SIZE_MAX;
  for (std::size_t l : imported.report.broken_lines) first_bad = std::min(first_bad, l);
  for (const auto& r : imported.report.repairs)
    if (r.line > 0) first_bad = std::min(first_bad, r.line);

  Session s;
  s.file = path.string();
  s.id = imported.session_id.empty() ? path.stem().string() : imported.session_id;
  s.held_out = (fnv1a(s.id) & 1) != 0;
  for (const RecordedCall& r : recorded) {
    if (r.line > first_bad) {
      ++counts.after_skip;
      continue;
    }
    if (imported.compaction_line != 0 && r.line > imported.compaction_line) {
      ++counts.after_compaction;
      continue;
    }
    auto at = message_at_line.find(r.line);
    if (at == message_at_line.end() || at->second == 0) {
      ++counts.not_in_chain;
      continue;
    }
    s.calls.push_back({at->second, r.prompt_tokens, family_of(r.model)});
  }
  if (s.calls.empty()) return std::nullopt;
  for (const auto& meter : meters) {
    std::vector<std::uint64_t> prefix(c.size() + 1, 0);
    for (std::size_t i = 0; i < c.size(); ++i) prefix[i + 1] = prefix[i] + meter->tokens(c[i]);
    s.prefix_tokens.push_back(std::move(prefix));
  }
  return s;
}

}  // namespace

const std::vector<std::string>& compared_meters() {
  static const std::vector<std::string> meters = {"chars4", "cl100k", "o200k", "claude-legacy"};
  return meters;
}

std::vector<Session> read_recorded_calls(const std::vector<fs::path>& files,
                                         const std::vector<std::shared_ptr<const Meter>>& meters, CallCounts& counts) {
  std::vector<Session> sessions;
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (progress) fmt::print(stderr, "\rcalibrate: {}/{} {}\033[K", i + 1, files.size(), files[i].filename().string());
    ++counts.files;
    if (auto s = read_session(files[i], meters, counts)) sessions.push_back(std::move(*s));
  }
  if (progress) fmt::print(stderr, "\n");
  counts.sessions = sessions.size();
  return sessions;
}

std::vector<Point> points_of(const std::vector<Session>& sessions, bool held_out) {
  std::vector<Point> out;
  for (const Session& s : sessions) {
    if (s.held_out != held_out) continue;
    std::map<std::string, const Call*> first;
    for (const Call& c : s.calls) {
      auto [it, inserted] = first.emplace(c.family, &c);
      if (!inserted) out.push_back({&s, &c, it->second});
    }
  }
  return out;
}

}  // namespace compactor::calibrate
