#include "session/continuation.hpp"

#include "compactor/archive.hpp"
#include "model/conversation_host.hpp"
#include "model/json_scanner.hpp"

#include <map>
#include <memory>

namespace compactor {
namespace {

// The `"cache_control": …` members a client sets as breakpoints in one message (or system
// entry): on a block of its content, and on a block of a block's content (a tool result's text
// blocks). Never one anywhere else: inside a tool's `input`, say, it is the user's data.
void breakpoint_members(std::string_view raw, std::size_t object, int depth, std::vector<detail::JsonMember>& out) {
  detail::for_each_json_member(raw, object, [&](const detail::JsonMember& m) {
    if (depth > 0 && m.key == "cache_control") out.push_back(m);
    if (m.key == "content" && depth < 2 && raw[m.value.begin] == '[')
      detail::for_each_json_element(raw, m.value.begin, [&](detail::JsonSpan block) {
        if (raw[block.begin] == '{') breakpoint_members(raw, block.begin, depth + 1, out);
      });
  });
}

// The value's bytes with those members cut out, the rest byte for byte: what the same client
// sends for that message once the breakpoint has moved on (cut textually, not re-serialized, so it
// hashes the same). Nothing when it has none.
std::optional<std::string> cut_breakpoints(std::string_view raw) {
  const std::size_t open = detail::skip_json_space(raw, 0);
  if (open >= raw.size() || raw[open] != '{') return std::nullopt;
  std::vector<detail::JsonMember> members;
  breakpoint_members(raw, open, 0, members);
  if (members.empty()) return std::nullopt;
  std::string out;
  std::size_t from = 0;
  for (const detail::JsonMember& m : members) {
    // With the comma before it; the first member of its object with the comma after it.
    std::size_t begin = m.begin, end = m.value.end;
    std::size_t back = begin;
    while (back > from && (raw[back - 1] == ' ' || raw[back - 1] == '\n' || raw[back - 1] == '\r' || raw[back - 1] == '\t')) --back;
    if (back > from && raw[back - 1] == ',') {
      begin = back - 1;
    } else {
      end = detail::skip_json_space(raw, end);
      if (end < raw.size() && raw[end] == ',') end = detail::skip_json_space(raw, end + 1);
    }
    out.append(raw.substr(from, begin - from));
    from = end;
  }
  out.append(raw.substr(from));
  return out;
}

MessagePtr cut_message(const MessagePtr& m) {
  if (m->raw().find("\"cache_control\"") == std::string_view::npos) return m;
  std::optional<std::string> cut = cut_breakpoints(m->raw());
  if (!cut) return m;
  auto buffer = std::make_shared<const std::string>(std::move(*cut));
  auto built = ConversationHost::message_from_input(buffer, *buffer);
  return built ? *built : m;
}

std::size_t count_breakpoints(std::string_view text) {
  std::size_t n = 0;
  for (std::size_t p = 0; (p = text.find("\"cache_control\"", p)) != std::string_view::npos; p += 15) ++n;
  return n;
}

}  // namespace

std::string without_breakpoints(std::string_view raw) {
  if (raw.find("\"cache_control\"") == std::string_view::npos) return std::string(raw);
  std::optional<std::string> cut = cut_breakpoints(raw);
  return cut ? std::move(*cut) : std::string(raw);
}

Continuation::Continuation(Conversation request) : request_(std::move(request)), stripped_from_(request_.size()) {
  stripped_.resize(request_.size());
}

const std::vector<MessagePtr>& Continuation::stripped(std::size_t begin) const {
  for (std::size_t i = begin; i < stripped_from_; ++i) stripped_[i] = cut_message(request_.messages()[i]);
  if (begin < stripped_from_) stripped_from_ = begin;
  return stripped_;
}

std::vector<std::string> Continuation::prefix_keys(std::string_view scope) const {
  const std::vector<MessagePtr>& messages = stripped(0);
  const auto& entries = request_.frame().system_entries;
  const std::vector<std::size_t>& slots = request_.system_slots();
  std::vector<std::string> out;
  out.reserve(messages.size());
  // The chain hashes the previous link and this message's hash; a system entry after a message
  // joins the chain marked as one. The first link names the scope (none for Anthropic's, so the
  // keys of state stored before scopes existed still match).
  std::string previous = "compactor-serve-state-1";
  if (scope != "anthropic_messages") previous += "\n" + std::string(scope);
  std::size_t k = 0;
  // Entries before the first message (an API whose instructions are items) head the chain.
  for (; k < entries.size() && k < slots.size() && slots[k] == 0; ++k)
    previous = receipt_of(previous + "\nsystem\n" + receipt_of(without_breakpoints(entries[k].raw))).substr(7);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    previous = receipt_of(previous + "\n" + receipt_of(messages[i]->raw())).substr(7);
    for (; k < entries.size() && k < slots.size() && slots[k] == i + 1; ++k)
      previous = receipt_of(previous + "\nsystem\n" + receipt_of(without_breakpoints(entries[k].raw))).substr(7);
    out.push_back(previous);
  }
  return out;
}

std::size_t Continuation::entries_through(std::size_t covered) const {
  const std::vector<std::size_t>& slots = request_.system_slots();
  std::size_t n = 0;
  while (n < slots.size() && slots[n] <= covered) ++n;
  return n;
}

bool Continuation::continues_from(const SentHistory& sent) const {
  if (sent.covered == 0 || sent.covered > request_.size()) return false;
  return sent.unchanged || sent.system_slots.size() == entries_through(sent.covered);
}

Conversation Continuation::input(const SentHistory* sent) const {
  if (sent == nullptr || sent->unchanged || !continues_from(*sent))
    return ConversationHost::with_messages_at(request_, stripped(0), request_.system_slots());
  const std::vector<MessagePtr>& cut = stripped(sent->covered);
  std::vector<MessagePtr> messages = sent->messages;
  std::vector<std::size_t> slots = sent->system_slots;
  const std::vector<std::size_t>& request_slots = request_.system_slots();
  for (std::size_t k = entries_through(sent->covered); k < request_slots.size(); ++k)
    slots.push_back(request_slots[k] - sent->covered + messages.size());
  messages.insert(messages.end(), cut.begin() + static_cast<std::ptrdiff_t>(sent->covered), cut.end());
  return ConversationHost::with_messages_at(request_, std::move(messages), std::move(slots));
}

SentHistory Continuation::sent_for(const Conversation& output) const {
  SentHistory sent;
  sent.covered = request_.size();
  sent.unchanged = output.messages() == stripped(0) && output.system_slots() == request_.system_slots();
  if (!sent.unchanged) {
    sent.messages = output.messages();
    sent.system_slots = output.system_slots();
  }
  return sent;
}

Resumed Continuation::resume(std::string_view scope, const SentHistories& histories) const {
  std::vector<std::string> keys = prefix_keys(scope);
  std::optional<SentHistory> stored = histories.longest(keys);
  if (stored && !continues_from(*stored)) stored.reset();
  Conversation in = input(stored ? &*stored : nullptr);
  return Resumed{std::move(keys), std::move(stored), std::move(in)};
}

Expected<std::optional<std::string>> Continuation::commit(const Resumed& resumed, const Conversation& output,
                                                          const std::function<Expected<std::string>(const Conversation&)>& write,
                                                          const SentHistories& histories) const {
  const SentHistory sent = sent_for(output);
  std::optional<std::string> body;
  if (!sent.unchanged) {
    auto written = write(with_breakpoints(output));
    if (!written) return written.error();
    body = std::move(*written);
  }
  if (!resumed.keys.empty())
    histories.put(resumed.keys.back(), sent, resumed.stored ? resumed.keys[resumed.stored->covered - 1] : std::string());
  return body;
}

Conversation Continuation::with_breakpoints(const Conversation& output) const {
  const std::vector<MessagePtr>& original = request_.messages();
  const std::vector<MessagePtr>& cut = stripped(0);
  std::map<std::string_view, MessagePtr> carried;
  for (std::size_t i = 0; i < original.size(); ++i)
    if (original[i] != cut[i]) carried[cut[i]->raw()] = original[i];
  if (carried.empty()) return output;
  // Breakpoints outside the messages (the system prompt, tools, the system entries) count first.
  std::size_t budget = 4;
  const FrameLayout& frame_layout = ConversationHost::layout(request_.frame());
  std::size_t outside = count_breakpoints(frame_layout.prefix) + count_breakpoints(frame_layout.suffix);
  for (const SystemEntry& e : request_.frame().system_entries) outside += count_breakpoints(e.raw);
  budget = outside >= budget ? 0 : budget - outside;
  std::vector<MessagePtr> result = output.messages();
  for (std::size_t i = result.size(); i-- > 0;) {
    auto it = carried.find(result[i]->raw());
    if (it == carried.end()) continue;
    std::size_t marks = count_breakpoints(it->second->raw());
    if (marks > budget) continue;
    budget -= marks;
    result[i] = it->second;
  }
  return ConversationHost::with_messages_at(output, std::move(result), output.system_slots());
}

}  // namespace compactor
