// The API calls a folder of Claude Code logs recorded, as calibration uses them: per session, the
// prompt size each call reported and the messages before it, with what each compared meter counts
// for every prefix of the session. Calls whose prompt the log cannot explain are left out and
// counted by reason.
#pragma once

#include "compactor/meter.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace compactor::calibrate {

// The meters calibration measures, in order: chars4 first (the baseline fit's base), then the
// exact ones a fit may scale.
const std::vector<std::string>& compared_meters();

struct Call {
  std::size_t prefix = 0;    // messages before the call
  std::uint64_t prompt = 0;  // tokens the API reported
  std::string family;        // opus, sonnet, haiku, else the model's name
};

struct Session {
  std::string file, id;
  bool held_out = false;  // by the FNV-1a hash of its id: even hashes fit, odd ones are held out
  std::vector<Call> calls;
  std::vector<std::vector<std::uint64_t>> prefix_tokens;  // [meter][n] = tokens of messages [0, n)
};

// What was read, and why calls were left out.
struct CallCounts {
  std::size_t files = 0, unreadable = 0, sessions = 0, calls = 0, synthetic = 0, after_skip = 0, after_compaction = 0,
              not_in_chain = 0, used = 0;
};

// The sessions with usable calls among `files` (Claude Code logs; agent-*.jsonl are sub-agent
// chains), counted by `meters` (compared_meters(), made). An unreadable file is named on stderr
// and skipped; on a terminal, progress is shown there too.
std::vector<Session> read_recorded_calls(const std::vector<std::filesystem::path>& files,
                                         const std::vector<std::shared_ptr<const Meter>>& meters, CallCounts& counts);

// A call with its session's reference call (the first of its family).
struct Point {
  const Session* session;
  const Call* call;
  const Call* ref;
};

// Every call but each session's first of its family, of the held-out half or of the fitting one.
std::vector<Point> points_of(const std::vector<Session>& sessions, bool held_out);

}  // namespace compactor::calibrate
