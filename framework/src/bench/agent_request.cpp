#include "bench/agent_request.hpp"

#include "model/conversation_host.hpp"

#include <boost/json.hpp>

namespace compactor::bench {

namespace json = boost::json;

namespace {

// The breakpoint on the newest message's last block, and on no other (a text content becomes
// one text block to carry it).
void move_cache_control(json::array& messages) {
  for (auto& m : messages)
    if (auto* content = m.is_object() ? m.get_object().if_contains("content") : nullptr; content != nullptr && content->is_array())
      for (auto& block : content->get_array())
        if (block.is_object()) block.get_object().erase("cache_control");
  if (messages.empty() || !messages.back().is_object()) return;
  json::value& content = messages.back().get_object()["content"];
  if (content.is_string()) content = json::array{json::object{{"type", "text"}, {"text", content.get_string()}}};
  if (content.is_array() && !content.get_array().empty() && content.get_array().back().is_object())
    content.get_array().back().get_object()["cache_control"] = json::object{{"type", "ephemeral"}};
}

}  // namespace

Expected<std::string> agent_request(const Conversation& session, std::size_t answer, const RequestFields& fields) {
  // The history before the answer, with the system entries placed before it (as the bench's replay).
  const std::vector<SystemEntry>& entries = session.frame().system_entries;
  std::vector<std::size_t> slots;
  for (std::size_t k = 0; k < entries.size() && entries[k].slot <= answer; ++k) slots.push_back(entries[k].slot);
  std::vector<MessagePtr> prefix(session.messages().begin(), session.messages().begin() + static_cast<std::ptrdiff_t>(answer));
  const Conversation history = ConversationHost::with_first_system_entries(session, slots.size(), std::move(prefix), std::move(slots));
  boost::system::error_code ec;
  json::value doc = json::parse(history.serialize(), ec);
  if (ec) return Error{"call before messages." + std::to_string(answer) + ": the history does not serialize as JSON: " + ec.message()};
  json::object body = doc.is_array() ? json::object{{"messages", std::move(doc)}} : std::move(doc.as_object());
  json::value* messages = body.if_contains("messages");
  if (messages == nullptr || !messages->is_array()) return Error{"call before messages." + std::to_string(answer) + ": no messages array"};
  move_cache_control(messages->get_array());
  if (!body.contains("model") && !fields.model.empty()) body["model"] = fields.model;
  if (!body.contains("max_tokens") && fields.max_tokens > 0) body["max_tokens"] = fields.max_tokens;
  return json::serialize(body);
}

}  // namespace compactor::bench
