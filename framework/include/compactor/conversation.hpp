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

// What surrounds the messages in the input, shared by every conversation derived from it.
struct ConversationFrame {
  InputFormat format = InputFormat::messages_array;
  std::shared_ptr<const std::string> buffer;  // the whole input, when there was one
  std::string_view prefix;                    // up to the first message
  std::string_view separator = ",";           // between messages (taken from the input)
  std::string_view suffix;                    // after the last message
  std::vector<MessagePtr> original;           // the messages as parsed: unchanged → input bytes
  Sizes fixed;                                // `system` and `tools` of a request body
  std::vector<std::string_view> fixed_json;   // their JSON, for a meter to count
  std::shared_ptr<const Meter> meter;         // counts `tokens` when set (budget.unit: tokens)
};

class Conversation {
 public:
  // A bare messages array around already-built messages.
  static Conversation from_messages(std::vector<MessagePtr> messages);
  Conversation(std::shared_ptr<const ConversationFrame> frame, std::vector<MessagePtr> messages);

  // The same frame around other messages: how a stage returns its candidate.
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

  // The same messages in a frame that counts tokens with `meter`.
  Conversation with_meter(std::shared_ptr<const Meter> meter) const;

  // True when every message is the very one parsed from the input, in order.
  bool unchanged_from_input() const;

  // The document to write: the input bytes when unchanged, else the frame around each
  // message's own bytes.
  std::string serialize() const;

 private:
  std::shared_ptr<const ConversationFrame> frame_;
  std::vector<MessagePtr> messages_;
  Sizes sizes_;
};

}  // namespace compactor
