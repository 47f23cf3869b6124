#include "compactor/message.hpp"

#include "model/conversation_reader.hpp"
#include "model/field_types.hpp"
#include "model/json_scanner.hpp"
#include "model/conversation_host.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

namespace compactor {
namespace {

using detail::json_kind;

// The base64 payload of an image or document block, which its size does not count.
std::uint64_t media_payload_size(const boost::json::object& block) {
  auto source = block.find("source");
  if (source == block.end() || !source->value().is_object()) return 0;
  auto data = source->value().get_object().find("data");
  if (data == source->value().get_object().end() || !data->value().is_string()) return 0;
  return data->value().get_string().size();
}

}  // namespace

std::string_view to_string(Role role) { return role == Role::user ? "user" : "assistant"; }

Message::Message(Private, boost::json::object object, Role role) : object_(std::move(object)), role_(role) {}

bool Message::has_kind(BlockKind kind) const {
  for (const Block& b : blocks_)
    if (b.kind() == kind) return true;
  return false;
}

std::string Message::text() const {
  std::string out;
  for (const Block& b : blocks_) {
    if (b.kind() != BlockKind::text) continue;
    if (!out.empty()) out += '\n';
    out += b.text();
  }
  return out;
}

Expected<MessagePtr> Message::from_json(boost::json::object object) {
  return build(std::move(object), nullptr, {});
}

Expected<MessagePtr> ConversationHost::message_from_input(std::shared_ptr<const std::string> buffer, std::string_view raw) {
  boost::json::parse_options options;
  options.max_depth = 100000;  // depth was enforced by the scanner that produced `raw`
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(raw, ec, {}, options);
  if (ec) return Error{"not valid JSON: " + ec.message()};
  return message_from_input(std::move(buffer), raw, std::move(value));
}

Expected<MessagePtr> ConversationHost::message_from_input(std::shared_ptr<const std::string> buffer, std::string_view raw,
                                                        boost::json::value parsed) {
  if (!parsed.is_object()) return Error{"a message must be a JSON object, got " + std::string(json_kind(parsed))};
  return Message::build(std::move(parsed.get_object()), std::move(buffer), raw);
}

Expected<MessagePtr> Message::build(boost::json::object object, std::shared_ptr<const std::string> buffer,
                                    std::string_view raw) {
  auto role_it = object.find("role");
  if (role_it == object.end()) return Error{"message has no \"role\""};
  if (!role_it->value().is_string())
    return Error{"\"role\" must be a string, got " + std::string(json_kind(role_it->value()))};
  std::string_view role_text = role_it->value().get_string();
  Role role;
  if (role_text == "user") {
    role = Role::user;
  } else if (role_text == "assistant") {
    role = Role::assistant;
  } else if (role_text == "system") {
    return Error{"role \"system\" is not allowed inside messages; put it in the top-level \"system\" field"};
  } else {
    return Error{"role must be \"user\" or \"assistant\", got \"" + std::string(role_text) + "\""};
  }

  auto content_it = object.find("content");
  if (content_it == object.end()) return Error{"message has no \"content\""};
  const boost::json::value& content = content_it->value();
  if (!content.is_string() && !content.is_array())
    return Error{"\"content\" must be a string or an array of blocks, got " + std::string(json_kind(content))};
  if (content.is_array()) {
    // Every field the API types, every block: one line per wrong field.
    std::vector<std::string> problems;
    const auto& array = content.get_array();
    for (std::size_t i = 0; i < array.size(); ++i) {
      const boost::json::value& block = array[i];
      std::string where = "content." + std::to_string(i);
      if (!block.is_object()) problems.push_back(where + ": a block must be an object, got " + std::string(json_kind(block)));
      else detail::block_field_problems(block.get_object(), where, problems);
    }
    if (!problems.empty()) {
      std::string lines;
      for (const auto& p : problems) lines += (lines.empty() ? "" : "\n") + p;
      return Error{lines};
    }
  }

  auto message = std::make_shared<Message>(Private{}, std::move(object), role);
  const boost::json::value& own_content = message->object_.at("content");
  std::uint64_t media_payload = 0, media_blocks = 0;
  if (own_content.is_string()) {
    message->content_is_string_ = true;
    message->blocks_.push_back(Block::string_content(own_content.get_string()));
  } else {
    const auto& array = own_content.get_array();
    message->blocks_.reserve(array.size());
    for (const auto& v : array) {
      Block b = Block::from_object(v.get_object());
      auto count_media = [&](const boost::json::object& o) {
        ++media_blocks;
        media_payload += media_payload_size(o);
      };
      if (b.kind() == BlockKind::image || b.kind() == BlockKind::document) count_media(v.get_object());
      // Images a tool returned count the same way as images a user sent.
      if (const boost::json::value* c = b.content(); b.kind() == BlockKind::tool_result && c && c->is_array())
        for (const auto& inner : c->get_array())
          if (inner.is_object()) {
            auto t = block_kind_from_type(Block::from_object(inner.get_object()).type());
            if (t == BlockKind::image || t == BlockKind::document) count_media(inner.get_object());
          }
      message->blocks_.push_back(b);
    }
  }

  if (buffer == nullptr) {
    buffer = std::make_shared<const std::string>(boost::json::serialize(message->object_));
    raw = *buffer;
    // A built message is held to what input is held to: Boost.JSON writes the bytes of its
    // strings as they are, so invalid UTF-8 from a stage would be written and committed.
    // The message sits one level inside the messages array, hence one level less.
    detail::JsonScanner scanner(raw, ReadOptions{}.max_depth - 1);
    detail::ScannedDocument doc;
    if (!scanner.scan_document(0, doc)) return Error{"the message as built is not valid input: " + scanner.error().what};
  }
  message->buffer_ = std::move(buffer);
  message->raw_ = raw;
  std::uint64_t media = media_blocks * kMediaBlockSize;
  std::uint64_t bytes = raw.size(), chars = count_code_points(raw);
  message->bytes_ = bytes - std::min(bytes, media_payload) + media;
  message->chars_ = chars - std::min(chars, media_payload) + media;
  return MessagePtr(std::move(message));
}

}  // namespace compactor
