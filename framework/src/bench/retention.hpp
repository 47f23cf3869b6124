// What a compacted request still holds of the original session: probes of the original (file
// paths in tool inputs, the first line of each is_error result, every user prompt, the tool
// names) are visible when their exact text is in the request, and recoverable when also in a blob
// its receipts reach.
#pragma once

#include "compactor/conversation.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::bench {

// Probes of the original session up to a call: visible in the request sent, or recoverable from
// the blobs its receipts reach (a visible probe is recoverable too).
struct Retention {
  std::uint64_t call = 0;  // 1-based index of the call measured
  std::uint64_t probes = 0, visible = 0, recoverable = 0;
  // The working facts among the probes: file paths and error lines (what the agent must not
  // re-discover); counted apart, since prompts and tool names are easy to keep.
  std::uint64_t facts = 0, facts_visible = 0;
  std::vector<std::string> lost;  // neither visible nor recoverable
};

// The probes of the messages [0, end) of the original session: file paths in tool inputs, the
// first line of each is_error result, every user prompt, the tool names. Sorted, unique.
std::vector<std::string> retention_probes(const Conversation& session, std::size_t end);
// The facts among them: file paths and error lines. Sorted, unique.
std::vector<std::string> fact_probes(const Conversation& session, std::size_t end);

// Measures `probes` against `request`, following receipts through the archive in `archive_dir`
// (and receipts inside restored blobs). `blobs` caches restored blobs' text between calls.
Retention measure_retention(const Conversation& request, const std::vector<std::string>& probes,
                            const std::vector<std::string>& facts, const std::string& archive_dir,
                            std::map<std::string, std::string>& blobs);

// The first non-blank line of `text`, trailing blanks cut: an error result's probe, and what a
// replay's error line quotes of a longer message.
std::string first_line(std::string_view text);

}  // namespace compactor::bench
