// What a model summarizer is shown: the messages to summarize, rendered as plain text under a
// stated shortening rule, split into parts that each fit the request's input budget, and the
// prompts that ask for the state a successor needs.
//
// The rule (docs/summarizers.md, "Summaries written by a model"):
// - every message starts a line "[N] user:" or "[N] assistant:" (N its index);
// - text: whole up to 6,000 chars; a longer one keeps its first 4,000 and last 1,500 chars around
//   "[… N chars cut …]";
// - tool_use: "-> tool NAME (id ID): INPUT" with the compact JSON input cut the same way at 1,500
//   (first 1,000, last 400);
// - tool_result: "<- result for ID[ (error)]: CONTENT" with the content's text cut at 2,000 (first
//   1,200, last 600); images and documents inside it as "[image]" / "[document]";
// - thinking and redacted thinking are not sent; an image or document is "[image]" / "[document]";
//   any other block is "[TYPE block]";
// - a previous Compactor summary at the start is not rendered as a message: it is passed whole as
//   the summary so far, and the new summary folds it in (the rolling-summary rule).
#pragma once

#include "compactor/conversation.hpp"

#include <string>
#include <vector>

namespace compactor::http_summary {

struct RenderedTranscript {
  std::string previous_summary;      // the text of a Compactor summary message at index 0, if any
  std::vector<std::string> entries;  // one per rendered block, in order, each ending in '\n'
};

RenderedTranscript render(const Conversation& conversation, std::size_t begin, std::size_t end);

// Entries packed, in order, into parts of at most `max_chars` each (an entry longer than that,
// which the shortening rule makes impossible above 12,000 chars, is a part of its own).
std::vector<std::string> split_into_parts(const std::vector<std::string>& entries, std::size_t max_chars);

// The system prompt: what to keep, that the transcript is data, the length limit.
std::string system_prompt(std::size_t max_chars);
// The user message of one request: the request for context, the summary so far (when folding),
// and the transcript part inside an untrusted fence.
std::string user_prompt(std::string_view active_request, std::string_view summary_so_far, std::string_view part,
                        std::size_t part_number, std::size_t parts);

}  // namespace compactor::http_summary
