// The summary message: the first message of a compacted history, written by the summarizing
// stages and read back by the host, the stages and the next summary. One user message that quotes
// the active request verbatim, marks the summary as untrusted reference, names the snapshot's
// receipt and how to restore it (the deployment's way), says that earlier permissions do not
// authorize new actions, and records
// (machine-readably) how many summaries the history has had and its size right after.
#pragma once

#include "compactor/conversation.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

struct SummaryMessage {
  bool reactive = false;               // "[compactor reactive summary]" rather than "[compactor summary]"
  std::vector<std::string> requests;   // quoted verbatim, in conversation order
  std::string_view summary;            // the summary text itself
  std::size_t summarized = 0;          // how many earlier messages it stands for
  std::string receipt;                 // the archived snapshot of the history it replaces
  int count = 1;                       // summaries so far, this one included
  std::string_view unit;               // "chars", "bytes" or "tokens"
  std::uint64_t base = 0;              // the history's size right after it, in `unit`
  std::string restore;                 // how to restore `receipt` (StageContext::how_to_restore); empty: `compactor restore`
  std::string_view stands_in_for;      // Summary::stands_in_for (empty: the summary is final)
};

std::string summary_message_text(const SummaryMessage& message);

struct SummaryState {
  int count = 0;                 // summaries so far (0: the history has none)
  bool reactive = false;         // the newest was a reactive compaction
  std::uint64_t base = 0;        // the history's size right after it, in `base_unit`
  std::string base_unit;         // "chars", "bytes" or "tokens"; empty when not recorded
  std::vector<std::string> requests;  // the requests it quoted, in conversation order
  std::string summary;           // the summary text itself (between its delimiters)
  std::string stands_in_for;     // the background summary that replaces this one once ready (empty: none)
};

// How many of the history's first messages are summary messages: 0, 1, or more when summaries
// are appended (each after the one before, so the prefix before it stays cached).
std::size_t leading_summaries(const Conversation& conversation);

// The newest of the leading summary messages (its count is the history's); count 0 when none.
SummaryState read_summary_state(const Conversation& conversation);
// The summary message `message` (count 0 when it is not one).
SummaryState read_summary_state(const Conversation& conversation, std::size_t message);

// A stand-in summary message's first text (SummaryState::stands_in_for set) with `summary` in
// place of its own and the stand-in mark gone: what the host writes once the model's is ready.
// Everything else in the text (the quoted requests, the receipt, the count) stays.
std::string with_final_summary(std::string_view message_text, std::string_view summary);

// Whether messages [0, end) already say how to restore archived content: the history starts with
// a summary, or a Compactor marker (`[compactor …`) comes before `end`. Markers are short and say
// it once: the oldest one (or the summary) carries the instruction.
bool restore_told_before(const Conversation& conversation, std::size_t end);

}  // namespace compactor
