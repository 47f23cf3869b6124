// One immutable message of a conversation. Messages are built only through the factories below
// and shared between conversations as MessagePtr: a stage that edits one message allocates that
// message only. Each message keeps the exact bytes it will be written as: for a parsed message
// its input span (so untouched input is written back byte-identical, `1.0` stays `1.0`), for a
// built one its compact serialization.
#pragma once

#include "compactor/block.hpp"
#include "compactor/error.hpp"
#include "compactor/size_unit.hpp"

#include <boost/json/object.hpp>
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

enum class Role { user, assistant };
std::string_view to_string(Role role);

class Message;
using MessagePtr = std::shared_ptr<const Message>;

// Every image or document block counts as this many chars (and bytes) instead of its base64
// payload: the model is billed per image, not per byte of its encoding (≈1,600 tokens).
inline constexpr std::uint64_t kMediaBlockSize = 6400;

class Message {
 public:
  // From JSON a stage built. Fails (with the reason) when it is not a message the model accepts
  // as such: not an object, role not user/assistant, content neither string nor array of
  // objects with a string "type".
  static Expected<MessagePtr> from_json(boost::json::object object);

  Role role() const { return role_; }
  const boost::json::object& json() const { return object_; }
  const std::vector<Block>& blocks() const { return blocks_; }
  bool content_is_string() const { return content_is_string_; }

  // The bytes this message is written as.
  std::string_view raw() const { return raw_; }
  // Chars and bytes (media blocks count kMediaBlockSize). Tokens depend on the meter: ask the
  // conversation (Conversation::size_of), the one place that counts them.
  std::uint64_t chars() const { return chars_; }
  std::uint64_t bytes() const { return bytes_; }

  bool has_tool_use() const { return has_kind(BlockKind::tool_use); }
  bool has_tool_result() const { return has_kind(BlockKind::tool_result); }
  bool has_kind(BlockKind kind) const;

  // Concatenated text of the text blocks (string content included), separated by "\n".
  std::string text() const;

  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

 private:
  struct Private {};

 public:
  Message(Private, boost::json::object object, Role role);  // use the factories

 private:
  friend class ConversationHost;  // reads messages from input bytes (ConversationHost::message_from_input)
  static Expected<MessagePtr> build(boost::json::object object, std::shared_ptr<const std::string> buffer,
                                    std::string_view raw);

  boost::json::object object_;
  Role role_;
  bool content_is_string_ = false;
  std::vector<Block> blocks_;
  std::shared_ptr<const std::string> buffer_;  // owns raw_ (input buffer, or own serialization)
  std::string_view raw_;
  std::uint64_t chars_ = 0;
  std::uint64_t bytes_ = 0;
  // The count a Meter cached for this message, its tag in the top bits (0: none). Only Meter
  // reads and writes it (Meter::tokens), so a plugin cannot poison it.
  friend class Meter;
  mutable std::atomic<std::uint64_t> cached_tokens_{0};
};

}  // namespace compactor
