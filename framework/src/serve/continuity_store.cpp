#include "serve/continuity_store.hpp"

#include "model/conversation_host.hpp"
#include "model/conversation_reader.hpp"
#include "model/json_scanner.hpp"

#include <boost/json/value.hpp>

namespace compactor::serve {
namespace {

// A stored history: a messages array, or, when system entries sit among its messages,
// `{"system_slots":[…],"messages":[…]}`: the entries themselves are the request's (the key names
// them), and writing them inline could not say which ones share a slot (joined entries), since
// two side by side are refused on reading. Nothing when it does not read back.
std::optional<SentHistory> decode(const std::string& text, std::size_t covered, const std::string& source) {
  SentHistory sent;
  sent.covered = covered;
  if (text == "=") {
    sent.unchanged = true;
    return sent;
  }
  const bool with_slots = text.starts_with(R"({"system_slots":)");
  ReadOptions options;
  options.source = source;
  options.format = with_slots ? InputFormat::request_body : InputFormat::messages_array;
  auto conversation = read_conversation(text, options);
  if (!conversation || conversation->empty()) return std::nullopt;
  std::vector<std::size_t> slots = conversation->system_slots();  // an older file's inline entries
  if (with_slots) {  // the slots are in the frame's prefix, `{"system_slots":[…],"messages":[`
    boost::system::error_code ec;
    boost::json::value head = detail::parse_json(std::string(ConversationHost::layout(conversation->frame()).prefix) + "]}", ec);
    const boost::json::array* list = ec ? nullptr : head.at("system_slots").if_array();
    if (list == nullptr) return std::nullopt;
    for (const auto& slot : *list) {
      if (!slot.is_uint64() && !(slot.is_int64() && slot.get_int64() >= 0)) continue;
      slots.push_back(static_cast<std::size_t>(slot.to_number<std::uint64_t>()));
    }
    if (slots.size() != list->size()) return std::nullopt;
  }
  sent.messages = conversation->messages();
  sent.system_slots = std::move(slots);
  return sent;
}

}  // namespace

std::optional<SentHistory> ContinuityStore::longest(const std::vector<std::string>& keys) const {
  // An entry that does not read back is as if absent: the next shorter prefix is tried.
  for (std::size_t count = keys.size(); count > 0;) {
    auto found = store_.longest_state(keys, count);
    if (!found || !*found) return std::nullopt;
    if (auto sent = decode((*found)->bytes, (*found)->covered, "state " + keys[(*found)->covered - 1])) {
      sent->sent_at_ms = (*found)->written_at_ms;  // when the history was sent: the conversation's last call
      return sent;
    }
    count = (*found)->covered - 1;
  }
  return std::nullopt;
}

bool ContinuityStore::put(const std::string& key, const SentHistory& sent, const std::string& supersedes) const {
  if (sent.unchanged) return store_.put_state(key, "=", supersedes).ok();
  std::string bytes;
  if (!sent.system_slots.empty()) {
    bytes = R"({"system_slots":[)";
    for (std::size_t k = 0; k < sent.system_slots.size(); ++k) bytes += (k > 0 ? "," : "") + std::to_string(sent.system_slots[k]);
    bytes += R"(],"messages":)";
  }
  bytes += "[";
  for (std::size_t i = 0; i < sent.messages.size(); ++i) {
    if (i > 0) bytes += ',';
    bytes.append(sent.messages[i]->raw());
  }
  bytes += "]";
  if (!sent.system_slots.empty()) bytes += "}";
  return store_.put_state(key, bytes, supersedes).ok();
}

}  // namespace compactor::serve
