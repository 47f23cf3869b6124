// The time a log wrote a record: Claude Code's `timestamp` on every line, Codex's on every record,
// Gemini CLI's on every message, all ISO 8601 ("2026-01-05T10:22:33.123Z", or with an offset
// "+02:00"). The bench replays a session's idle gaps with them: a call that comes after the
// prompt cache's lifetime finds it cold.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace compactor {

// Milliseconds since the Unix epoch, or nothing when `text` is not such a time (a date alone,
// fields out of range, anything after the zone).
std::optional<std::int64_t> parse_log_time(std::string_view text);

}  // namespace compactor
