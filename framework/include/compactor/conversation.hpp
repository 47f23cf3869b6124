// An immutable conversation: the ordered messages plus the frame they came in (a bare messages
// array, a request body whose other fields are written back as they were, or JSONL). Copying a
// Conversation copies message pointers, never message JSON.
#pragma once

#include "compactor/message.hpp"
#include "compactor/meter.hpp"
#include "compactor/size_unit.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

enum class InputFormat { messages_array, request_body, jsonl };
std::string_view to_string(InputFormat format);

// A `role: "system"` entry inside `messages` (Claude Code's mid-conversation system text). The
// host owns them: a stage never sees one among `messages()`, so none is ever summarized, cut or
// taken for the user's request. Each is written back verbatim at its slot: the number of
// messages before it. The frame's buffer owns its bytes. When a stage leaves fewer valid slots
// than entries, entries that share a slot are written as one entry holding their text blocks in
// order (the API refuses two adjacent entries), so none is ever lost.
struct SystemEntry {
  std::string_view raw;   // the entry's JSON, as the input has it
  std::size_t slot = 0;   // its slot in the input (messages before it, system entries not counted)
  std::string blocks;     // its content as text blocks (`{"type":"text",…},…`), for a joined entry
};

// How the input is laid out: its bytes around the messages (an untouched conversation is written
// back byte for byte) and where its API lets system entries sit. The host's alone, so a stage
// cannot depend on it (model/conversation_host.hpp).
struct FrameLayout;
class ConversationHost;

// What surrounds the messages in the input, shared by every conversation derived from it.
struct ConversationFrame {
  InputFormat format = InputFormat::messages_array;
  Sizes fixed;                              // `system`, `tools` and the system entries
  std::vector<SystemEntry> system_entries;  // in input order
  std::shared_ptr<const Meter> meter;       // counts `tokens` when set (budget.unit: tokens)

 private:
  friend class ConversationHost;
  std::shared_ptr<const FrameLayout> layout_;  // none: a bare Messages API array built in memory
};

class Conversation {
 public:
  // A bare messages array around already-built messages.
  static Conversation from_messages(std::vector<MessagePtr> messages);

  // The same frame around other messages: how a stage returns its candidate. The system entries
  // are placed again (see system_slots()); the host places them from the committed conversation
  // after every stage whatever the stage did, so a stage can neither drop nor move one.
  Conversation with_messages(std::vector<MessagePtr> messages) const;

  const std::vector<MessagePtr>& messages() const { return messages_; }
  std::size_t size() const { return messages_.size(); }
  bool empty() const { return messages_.empty(); }
  const Message& operator[](std::size_t index) const { return *messages_[index]; }
  const ConversationFrame& frame() const { return *frame_; }
  InputFormat format() const { return frame_->format; }

  // Messages plus `system` and `tools`: what a budget measures. Tokens come from the frame's
  // meter, or are chars / 4 when it has none (the host always sets the configured meter).
  Sizes sizes() const { return sizes_; }
  std::uint64_t size_in(SizeUnit unit) const { return sizes_.in(unit); }
  // One message's size in a unit (tokens through this conversation's meter, cached).
  std::uint64_t size_of(const Message& message, SizeUnit unit) const;

  // Where each of the frame's system entries is written (messages before it), in entry order.
  static constexpr std::size_t kUnplaced = static_cast<std::size_t>(-1);
  const std::vector<std::size_t>& system_slots() const { return slots_; }
  bool system_entries_placed() const;

  // The document to write: the input bytes when unchanged, else the frame around each
  // message's own bytes, with the system entries at their slots.
  std::string serialize() const;
  // Messages [begin, end) as JSONL, each one's own bytes and a "\n", as views: the snapshot a
  // stage archives (HashedBlob) without joining it.
  std::vector<std::string_view> jsonl_pieces(std::size_t begin, std::size_t end) const;

 private:
  friend class ConversationHost;
  Conversation(std::shared_ptr<const ConversationFrame> frame, std::vector<MessagePtr> messages);
  std::vector<std::string_view> pieces() const;

  std::shared_ptr<const ConversationFrame> frame_;
  std::vector<MessagePtr> messages_;
  // Sets where the entries go, and the sizes with entries that share a slot counted as the one
  // entry written for them.
  void set_system_slots(std::vector<std::size_t> slots);

  std::vector<std::size_t> slots_;  // one per frame->system_entries
  Sizes sizes_;
};

}  // namespace compactor
