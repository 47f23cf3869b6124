#include "compactor/conversation.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace compactor {
namespace {
// Without a meter, tokens are the usual guess (chars / 4, as the chars4 meter counts): never 0.
std::uint64_t chars4(std::uint64_t chars) { return (chars + 3) / 4; }
}  // namespace

std::string_view to_string(InputFormat format) {
  switch (format) {
    case InputFormat::messages_array: return "messages array";
    case InputFormat::request_body: return "request body";
    case InputFormat::jsonl: return "JSONL";
  }
  return "?";
}

Conversation Conversation::from_messages(std::vector<MessagePtr> messages) {
  auto frame = std::make_shared<ConversationFrame>();
  frame->prefix = "[";
  frame->suffix = "]";
  return Conversation(std::move(frame), std::move(messages));
}

Conversation::Conversation(std::shared_ptr<const ConversationFrame> frame, std::vector<MessagePtr> messages)
    : frame_(std::move(frame)), messages_(std::move(messages)) {
  // A frame with system entries starts them at their input slots (when valid here).
  slots_.reserve(frame_->system_entries.size());
  std::size_t previous = 0;
  for (const SystemEntry& e : frame_->system_entries) {
    bool ok = e.slot > previous && valid_system_slot(messages_, e.slot);
    slots_.push_back(ok ? e.slot : kUnplaced);
    if (ok) previous = e.slot;
  }
  sizes_ = frame_->fixed;
  const Meter* meter = frame_->meter.get();
  if (meter == nullptr) sizes_.tokens = chars4(sizes_.chars);
  for (const MessagePtr& m : messages_) {
    sizes_.chars += m->chars();
    sizes_.bytes += m->bytes();
    sizes_.tokens += meter != nullptr ? meter->tokens(*m) : chars4(m->chars());
  }
}

std::uint64_t Conversation::size_of(const Message& message, SizeUnit unit) const {
  switch (unit) {
    case SizeUnit::chars: return message.chars();
    case SizeUnit::bytes: return message.bytes();
    case SizeUnit::tokens: return frame_->meter ? frame_->meter->tokens(message) : chars4(message.chars());
  }
  return 0;
}

namespace {

// `system` (a string, or text blocks), `tools` (each tool's JSON) and the system entries inside
// `messages` (their content), as the model reads them.
std::uint64_t fixed_tokens(const Meter& meter, std::string_view json) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  if (ec) return meter.count_text(json);
  if (const auto* s = v.if_string()) return meter.count_text(*s);
  // A system entry inside `messages` counts as its content does.
  if (const auto* o = v.if_object(); o && o->contains("content")) {
    const auto& content = o->at("content");
    if (content.is_string() || content.is_array()) return fixed_tokens(meter, boost::json::serialize(content));
  }
  const auto* items = v.if_array();
  if (items == nullptr) return meter.count_text(boost::json::serialize(v));
  std::uint64_t n = 0;
  for (const auto& item : *items) {
    const auto* o = item.if_object();
    const auto* type = o && o->contains("type") ? o->at("type").if_string() : nullptr;
    if (type && *type == "text" && o->contains("text") && o->at("text").is_string())
      n += meter.count_text(o->at("text").get_string());
    else
      n += meter.count_text(boost::json::serialize(item));
  }
  return n;
}

}  // namespace

Conversation Conversation::with_meter(std::shared_ptr<const Meter> meter) const {
  auto frame = std::make_shared<ConversationFrame>(*frame_);
  frame->fixed.tokens = 0;
  if (meter)
    for (std::string_view json : frame->fixed_json) frame->fixed.tokens += fixed_tokens(*meter, json);
  frame->meter = std::move(meter);
  Conversation c(std::move(frame), messages_);
  c.slots_ = slots_;  // the entries stay where they are
  return c;
}

bool Conversation::valid_system_slot(const std::vector<MessagePtr>& messages, std::size_t slot) {
  if (slot == 0 || slot > messages.size()) return false;
  const Message& before = *messages[slot - 1];
  if (before.role() == Role::assistant) {
    // Only after a server tool use that ends the turn (the API continues it); never where a
    // tool_use waits for its results.
    if (before.blocks().empty() || before.blocks().back().kind() != BlockKind::server_tool_use ||
        before.has_tool_use())
      return false;
  }
  return slot == messages.size() || messages[slot]->role() == Role::assistant;
}

bool Conversation::system_entries_placed() const {
  for (std::size_t slot : slots_)
    if (slot == kUnplaced) return false;
  return true;
}

namespace {

// Where the entries placed at `slots` among `before` go among `after`: each after the message it
// followed, when that message is still there (the same pointer) and the slot is valid; else from
// where the first surviving message that came after it went (or the end), the first valid slot.
// Slots only grow and never repeat: the order is kept and no two entries touch.
std::vector<std::size_t> place_entries(const std::vector<MessagePtr>& before, const std::vector<std::size_t>& slots,
                                       const std::vector<MessagePtr>& after) {
  std::vector<std::size_t> out;
  out.reserve(slots.size());
  if (slots.empty()) return out;
  std::unordered_map<const Message*, std::size_t> index;
  index.reserve(after.size() * 2);
  for (std::size_t i = 0; i < after.size(); ++i) index.emplace(after[i].get(), i);
  auto find = [&](std::size_t old) -> std::optional<std::size_t> {
    auto it = index.find(before[old].get());
    if (it == index.end()) return std::nullopt;
    return it->second;
  };
  std::size_t floor = 1;  // the lowest slot the next entry may take
  for (std::size_t slot : slots) {
    if (slot == Conversation::kUnplaced || slot == 0 || slot > before.size()) {
      out.push_back(Conversation::kUnplaced);
      continue;
    }
    std::size_t start = after.size();
    if (auto anchor = find(slot - 1)) {
      start = *anchor + 1;
    } else {
      for (std::size_t t = slot; t < before.size(); ++t)
        if (auto next = find(t)) {
          start = *next;
          break;
        }
    }
    std::size_t placed = Conversation::kUnplaced;
    for (std::size_t s = std::max(start, floor); s <= after.size(); ++s)
      if (Conversation::valid_system_slot(after, s)) {
        placed = s;
        break;
      }
    out.push_back(placed);
    if (placed != Conversation::kUnplaced) floor = placed + 1;
  }
  return out;
}

}  // namespace

Conversation Conversation::with_messages(std::vector<MessagePtr> messages) const {
  Conversation c(frame_, std::move(messages));
  if (!slots_.empty()) c.slots_ = place_entries(messages_, slots_, c.messages_);
  return c;
}

Conversation Conversation::with_system_entries_placed_from(const Conversation& before) const {
  Conversation c = *this;
  if (frame_ == before.frame_ && !before.slots_.empty())
    c.slots_ = place_entries(before.messages_, before.slots_, messages_);
  return c;
}

Conversation Conversation::with_messages_at(std::vector<MessagePtr> messages, std::vector<std::size_t> slots) const {
  Conversation c(frame_, std::move(messages));
  slots.resize(c.slots_.size(), kUnplaced);
  std::size_t floor = 1;
  for (std::size_t& slot : slots) {
    if (slot == kUnplaced || slot < floor || !valid_system_slot(c.messages_, slot)) slot = kUnplaced;
    else floor = slot + 1;
  }
  c.slots_ = std::move(slots);
  return c;
}

Conversation Conversation::with_first_system_entries(std::size_t count, std::vector<MessagePtr> messages,
                                                     std::vector<std::size_t> slots) const {
  if (count >= frame_->system_entries.size()) return with_messages_at(std::move(messages), std::move(slots));
  auto frame = std::make_shared<ConversationFrame>(*frame_);
  for (std::size_t k = count; k < frame->system_entries.size(); ++k) {
    std::string_view raw = frame->system_entries[k].raw;
    frame->fixed.chars -= count_code_points(raw);
    frame->fixed.bytes -= raw.size();
    if (frame->meter) frame->fixed.tokens -= fixed_tokens(*frame->meter, raw);
    std::erase_if(frame->fixed_json, [&](std::string_view j) { return j.data() == raw.data() && j.size() == raw.size(); });
  }
  frame->system_entries.resize(count);
  return Conversation(std::move(frame), {}).with_messages_at(std::move(messages), std::move(slots));
}

bool Conversation::unchanged_from_input() const {
  const auto& original = frame_->original;
  if (frame_->buffer == nullptr || original.size() != messages_.size()) return false;
  for (std::size_t i = 0; i < messages_.size(); ++i)
    if (messages_[i] != original[i]) return false;
  for (std::size_t k = 0; k < slots_.size(); ++k)
    if (slots_[k] != frame_->system_entries[k].slot) return false;
  return true;
}

std::string Conversation::serialize() const {
  if (unchanged_from_input()) return *frame_->buffer;
  const auto& entries = frame_->system_entries;
  std::size_t total = frame_->prefix.size() + frame_->suffix.size();
  for (const MessagePtr& m : messages_) total += m->raw().size() + frame_->separator.size();
  for (const SystemEntry& e : entries) total += e.raw.size() + frame_->separator.size();
  std::string out;
  out.reserve(total);
  out += frame_->prefix;
  bool first = true;
  auto add = [&](std::string_view raw) {
    if (!first) out += frame_->separator;
    out += raw;
    first = false;
  };
  // An unplaced entry (only in a candidate the structure checker refuses) is written last rather
  // than lost.
  std::size_t k = 0;
  for (std::size_t i = 0; i <= messages_.size(); ++i) {
    for (; k < entries.size() && slots_[k] != kUnplaced && slots_[k] <= i; ++k) add(entries[k].raw);
    if (i < messages_.size()) add(messages_[i]->raw());
  }
  for (; k < entries.size(); ++k) add(entries[k].raw);
  out += frame_->suffix;
  return out;
}

}  // namespace compactor
