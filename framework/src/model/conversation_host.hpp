// What only the host does with a conversation: lay its frame over the input's bytes and write an
// untouched one back byte for byte, place the system entries it keeps beside the messages, and
// put a stage's candidate in the committed conversation's frame. None of it is in the SDK, so
// none of it is a reason to change the plugin API; the readers, the wire formats, the session
// rule, the pipeline and the bench reach it here.
#pragma once

#include "compactor/conversation.hpp"
#include "compactor/stage.hpp"

#include <boost/json/value.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

// Where a system entry may sit among the messages. The Messages API's rule: after a user
// message, last or before an assistant message, never next to another entry (entries that end up
// sharing a slot are written joined). An API whose instructions are items of the input (the
// OpenAI Responses API's developer messages, the context a client injects as user messages) lets
// them sit anywhere but inside a tool pair: before the first message, after an assistant turn,
// several in a row (each written on its own).
enum class SystemEntryPlacement { messages_api, outside_tool_pairs };

// How the input is laid out: where the messages sat in it (what surrounds them, the messages as
// parsed, so that an untouched conversation is written as `buffer`), the JSON of what counts
// besides them, and where its system entries may sit.
struct FrameLayout {
  std::shared_ptr<const std::string> buffer;  // the whole input, when there was one
  std::string_view prefix = "[";              // up to the first message
  std::string_view separator = ",";           // between messages (taken from the input)
  std::string_view suffix = "]";              // after the last message
  std::vector<MessagePtr> original;           // the messages as parsed: unchanged → input bytes
  std::vector<std::string_view> fixed_json;   // `system`, `tools`, the system entries: for a meter to count
  SystemEntryPlacement entry_placement = SystemEntryPlacement::messages_api;
};

class ConversationHost {
 public:
  // `messages` in `frame`: how a reader builds what it read.
  static Conversation make(std::shared_ptr<const ConversationFrame> frame, std::vector<MessagePtr> messages);
  // A message from a span of input bytes the caller has already validated as JSON: `buffer`
  // keeps the bytes alive and `raw` points into it; `parsed`, when the reader parsed `raw` while
  // validating it (one pass).
  static Expected<MessagePtr> message_from_input(std::shared_ptr<const std::string> buffer, std::string_view raw);
  static Expected<MessagePtr> message_from_input(std::shared_ptr<const std::string> buffer, std::string_view raw,
                                                 boost::json::value parsed);
  // The same messages in a frame that counts tokens with `meter`.
  static Conversation with_meter(const Conversation& c, std::shared_ptr<const Meter> meter);
  // The document serialize() writes, as views in order (into the frame and the messages), for a
  // writer that needs no joined copy (writev).
  static std::vector<std::string_view> pieces(const Conversation& c) { return c.pieces(); }

  // The frame's layout; a frame built in memory has a bare Messages API array's.
  static const FrameLayout& layout(const ConversationFrame& frame);
  static void set_layout(ConversationFrame& frame, FrameLayout value);

  // These messages with the system entries at exactly these slots (one per frame entry); an
  // invalid slot is kept as kUnplaced. How serve rebuilds what it sent before.
  static Conversation with_messages_at(const Conversation& c, std::vector<MessagePtr> messages,
                                       std::vector<std::size_t> slots);
  // The same with only the frame's first `count` system entries (the others, and their sizes,
  // left out of a copy of the frame): a replay of a session call by call.
  static Conversation with_first_system_entries(const Conversation& c, std::size_t count, std::vector<MessagePtr> messages,
                                                std::vector<std::size_t> slots);
  // `c` with the system entries placed again from `before`: each after the message it followed
  // there if that message is still here and the slot is valid, else at the first valid slot from
  // where the messages after it went (or, past the last one, the slot of the entry before it), in
  // order; entries in one slot are joined when written. kUnplaced when there is none (the
  // structure checker refuses such a candidate).
  static Conversation with_system_entries_placed_from(const Conversation& c, const Conversation& before);

  // True when an entry may sit at `slot` among `messages`: after a user message (or an assistant
  // message that ends in a server tool use, without a tool_use to answer), and last or before an
  // assistant message.
  static bool valid_system_slot(const std::vector<MessagePtr>& messages, std::size_t slot);
  // The same under `placement`: with outside_tool_pairs, any slot not right after a message with
  // a tool_use (whose results come next), slot 0 included.
  static bool valid_system_slot(const std::vector<MessagePtr>& messages, std::size_t slot, SystemEntryPlacement placement);
  // The first half of that rule, on its own for the reader: an entry may follow `before`.
  static bool system_entry_may_follow(const Message& before);

  // True when every message is the very one parsed from the input, in order.
  static bool unchanged_from_input(const Conversation& c);

  // A stage's candidate in the frame of the conversation it was given (as built when the stage
  // already made it in that very frame, so its sizes are not summed again), its system entries
  // placed from the committed conversation's; `committed` itself when the stage had nothing to do.
  static Conversation in_frame_of(const StageResult& result, const Conversation& committed);
};

}  // namespace compactor
