#include "compactor/message_edit.hpp"

#include "model/json_scanner.hpp"

#include <boost/json/serialize.hpp>

namespace compactor {

Expected<MessagePtr> with_result_contents(const Message& message,
                                          std::vector<std::pair<std::size_t, boost::json::value>> replacements) {
  if (message.content_is_string()) return Error{"the message has string content, so no tool_result blocks"};
  boost::json::object copy = message.json();
  auto& blocks = copy["content"].as_array();
  for (auto& [index, content] : replacements) {
    if (index >= blocks.size() || message.blocks()[index].kind() != BlockKind::tool_result)
      return Error{"content." + std::to_string(index) + " is not a tool_result block"};
    blocks[index].as_object()["content"] = std::move(content);
  }
  return Message::from_json(std::move(copy));
}

Expected<MessagePtr> with_texts(const Message& message, std::vector<std::pair<std::size_t, std::string>> replacements) {
  boost::json::object copy = message.json();
  for (auto& [index, text] : replacements) {
    if (index >= message.blocks().size() || message.blocks()[index].kind() != BlockKind::text)
      return Error{"content." + std::to_string(index) + " is not a text block"};
    if (message.content_is_string()) copy["content"] = std::move(text);
    else copy["content"].as_array()[index].as_object()["text"] = std::move(text);
  }
  return Message::from_json(std::move(copy));
}

std::string_view raw_block_field(const Message& message, std::size_t block, std::string_view key) {
  if (message.content_is_string()) return {};
  auto span = detail::find_value_span(message.raw(), {{"content"}, {{}, block}, {key}});
  if (!span) return {};
  return message.raw().substr(span->begin, span->end - span->begin);
}

std::uint64_t result_content_chars(const Block& tool_result) {
  const boost::json::value* content = tool_result.content();
  if (content == nullptr) return 0;
  if (content->is_string()) return count_code_points(content->get_string());
  std::uint64_t chars = 0;
  if (content->is_array()) {
    for (const auto& item : content->get_array()) {
      if (!item.is_object()) continue;
      const auto& o = item.get_object();
      auto type = o.find("type");
      std::string_view t = type != o.end() && type->value().is_string() ? std::string_view(type->value().get_string()) : "";
      auto text = o.find("text");
      if (t == "text" && text != o.end() && text->value().is_string())
        chars += count_code_points(text->value().get_string());
      else if (t == "image" || t == "document")
        chars += kMediaBlockSize;
      else
        chars += count_code_points(boost::json::serialize(item));
    }
    return chars;
  }
  return count_code_points(boost::json::serialize(*content));
}

}  // namespace compactor
