#include "compactor/conversation.hpp"

#include "model/conversation_host.hpp"
#include "model/json_scanner.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

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
  return Conversation(std::make_shared<ConversationFrame>(), std::move(messages));  // a bare array's bytes
}

const FrameLayout& ConversationHost::layout(const ConversationFrame& frame) {
  static const FrameLayout bare_array;
  return frame.layout_ != nullptr ? *frame.layout_ : bare_array;
}

void ConversationHost::set_layout(ConversationFrame& frame, FrameLayout value) {
  frame.layout_ = std::make_shared<const FrameLayout>(std::move(value));
}

Conversation::Conversation(std::shared_ptr<const ConversationFrame> frame, std::vector<MessagePtr> messages)
    : frame_(std::move(frame)), messages_(std::move(messages)) {
  // A frame with system entries starts them at their input slots (when valid here).
  slots_.reserve(frame_->system_entries.size());
  // Under the Messages API's rule no two entries share a slot; under the other, several may.
  const SystemEntryPlacement placement = ConversationHost::layout(*frame_).entry_placement;
  const bool shared = placement == SystemEntryPlacement::outside_tool_pairs;
  std::size_t previous = 0;
  for (const SystemEntry& e : frame_->system_entries) {
    bool ok = (shared ? e.slot >= previous : e.slot > previous) && ConversationHost::valid_system_slot(messages_, e.slot, placement);
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
  boost::json::value v = detail::parse_json(json, ec);
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
    // Text parts (the Messages API's, and the Responses API's input and output text) count as text.
    if (type && (*type == "text" || *type == "input_text" || *type == "output_text") && o->contains("text") && o->at("text").is_string())
      n += meter.count_text(o->at("text").get_string());
    else
      n += meter.count_text(boost::json::serialize(item));
  }
  return n;
}

// What writing entries that share a slot as one entry changes in chars and bytes: its JSON is
// not the sum of theirs. (A meter counts their text, which joining leaves as it is.)
std::pair<std::int64_t, std::int64_t> joined_delta(const ConversationFrame& frame, const std::vector<std::size_t>& slots) {
  constexpr std::string_view kOpen = R"({"role":"system","content":[)", kClose = "]}";
  std::int64_t chars = 0, bytes = 0;
  if (ConversationHost::layout(frame).entry_placement != SystemEntryPlacement::messages_api) return {chars, bytes};  // never joined
  const auto& entries = frame.system_entries;
  for (std::size_t k = 0; k < slots.size();) {
    std::size_t end = k + 1;
    while (end < slots.size() && slots[k] != Conversation::kUnplaced && slots[end] == slots[k]) ++end;
    if (end - k > 1) {
      std::size_t blocks = 0;
      chars += static_cast<std::int64_t>(kOpen.size() + kClose.size());
      bytes += static_cast<std::int64_t>(kOpen.size() + kClose.size());
      for (std::size_t j = k; j < end; ++j) {
        const SystemEntry& e = entries[j];
        chars -= static_cast<std::int64_t>(count_code_points(e.raw));
        bytes -= static_cast<std::int64_t>(e.raw.size());
        if (e.blocks.empty()) continue;
        std::int64_t comma = blocks++ > 0 ? 1 : 0;
        chars += static_cast<std::int64_t>(count_code_points(e.blocks)) + comma;
        bytes += static_cast<std::int64_t>(e.blocks.size()) + comma;
      }
    }
    k = end;
  }
  return {chars, bytes};
}

}  // namespace

void Conversation::set_system_slots(std::vector<std::size_t> slots) {
  auto [chars_before, bytes_before] = joined_delta(*frame_, slots_);
  slots_ = std::move(slots);
  auto [chars, bytes] = joined_delta(*frame_, slots_);
  const std::uint64_t fixed_chars = frame_->fixed.chars;
  sizes_.chars = sizes_.chars + static_cast<std::uint64_t>(chars) - static_cast<std::uint64_t>(chars_before);
  sizes_.bytes = sizes_.bytes + static_cast<std::uint64_t>(bytes) - static_cast<std::uint64_t>(bytes_before);
  if (frame_->meter == nullptr)
    sizes_.tokens = sizes_.tokens + chars4(fixed_chars + static_cast<std::uint64_t>(chars)) -
                    chars4(fixed_chars + static_cast<std::uint64_t>(chars_before));
}

Conversation ConversationHost::make(std::shared_ptr<const ConversationFrame> frame, std::vector<MessagePtr> messages) {
  return Conversation(std::move(frame), std::move(messages));
}

Conversation ConversationHost::with_meter(const Conversation& in, std::shared_ptr<const Meter> meter) {
  auto frame = std::make_shared<ConversationFrame>(*in.frame_);
  frame->fixed.tokens = 0;
  if (meter)
    for (std::string_view json : ConversationHost::layout(*frame).fixed_json) frame->fixed.tokens += fixed_tokens(*meter, json);
  frame->meter = std::move(meter);
  Conversation c(std::move(frame), in.messages_);
  c.set_system_slots(in.slots_);  // the entries stay where they are
  return c;
}

bool ConversationHost::system_entry_may_follow(const Message& before) {
  // After an assistant message only when a server tool use ends the turn (the API continues
  // it); never where a tool_use waits for its results.
  return before.role() == Role::user || (!before.blocks().empty() &&
                                         before.blocks().back().kind() == BlockKind::server_tool_use &&
                                         !before.has_tool_use());
}

bool ConversationHost::valid_system_slot(const std::vector<MessagePtr>& messages, std::size_t slot,
                                         SystemEntryPlacement placement) {
  if (placement == SystemEntryPlacement::messages_api) return valid_system_slot(messages, slot);
  // Not between a tool_use and its results, which the next message holds.
  return slot <= messages.size() && (slot == 0 || !messages[slot - 1]->has_tool_use());
}

bool ConversationHost::valid_system_slot(const std::vector<MessagePtr>& messages, std::size_t slot) {
  if (slot == 0 || slot > messages.size() || !system_entry_may_follow(*messages[slot - 1])) return false;
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
// Slots never decrease, so the order is kept; entries that share one are joined when written,
// since the API refuses two adjacent entries. Past the last valid slot an entry joins the one
// before it rather than being lost.
std::vector<std::size_t> place_entries(const std::vector<MessagePtr>& before, const std::vector<std::size_t>& slots,
                                       const std::vector<MessagePtr>& after, SystemEntryPlacement placement) {
  // Under outside_tool_pairs entries may come first and share a slot, each written on its own.
  const bool shared = placement == SystemEntryPlacement::outside_tool_pairs;
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
  std::size_t floor = shared ? 0 : 1;  // the lowest slot the next entry may take
  std::size_t previous = Conversation::kUnplaced;  // the slot of the latest placed entry
  for (std::size_t slot : slots) {
    if (slot == Conversation::kUnplaced || (slot == 0 && !shared) || slot > before.size()) {
      out.push_back(Conversation::kUnplaced);
      continue;
    }
    std::size_t start = after.size();
    if (slot == 0) {
      start = 0;
    } else if (auto anchor = find(slot - 1)) {
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
      if (ConversationHost::valid_system_slot(after, s, placement)) {
        placed = s;
        break;
      }
    if (placed == Conversation::kUnplaced) placed = previous;  // joined with the entry before it, if any
    out.push_back(placed);
    // The next entry takes a later slot if there is one, else shares this one.
    if (placed != Conversation::kUnplaced) floor = (previous = placed) + (shared ? 0 : 1);
  }
  return out;
}

}  // namespace

Conversation Conversation::with_messages(std::vector<MessagePtr> messages) const {
  Conversation c(frame_, std::move(messages));
  if (!slots_.empty()) c.set_system_slots(place_entries(messages_, slots_, c.messages_, ConversationHost::layout(*frame_).entry_placement));
  return c;
}

Conversation ConversationHost::with_system_entries_placed_from(const Conversation& placed, const Conversation& before) {
  Conversation c = placed;
  if (placed.frame_ == before.frame_ && !before.slots_.empty())
    c.set_system_slots(place_entries(before.messages_, before.slots_, placed.messages_, layout(*placed.frame_).entry_placement));
  return c;
}

Conversation ConversationHost::with_messages_at(const Conversation& in, std::vector<MessagePtr> messages,
                                                std::vector<std::size_t> slots) {
  Conversation c(in.frame_, std::move(messages));
  const SystemEntryPlacement placement = layout(*in.frame_).entry_placement;
  slots.resize(c.slots_.size(), Conversation::kUnplaced);
  std::size_t floor = placement == SystemEntryPlacement::messages_api ? 1 : 0;
  for (std::size_t& slot : slots) {
    if (slot == Conversation::kUnplaced || slot < floor || !valid_system_slot(c.messages_, slot, placement))
      slot = Conversation::kUnplaced;
    else floor = slot;  // entries may share a slot (joined when written)
  }
  c.set_system_slots(std::move(slots));
  return c;
}

Conversation ConversationHost::with_first_system_entries(const Conversation& in, std::size_t count, std::vector<MessagePtr> messages,
                                                         std::vector<std::size_t> slots) {
  if (count >= in.frame_->system_entries.size()) return with_messages_at(in, std::move(messages), std::move(slots));
  auto frame = std::make_shared<ConversationFrame>(*in.frame_);
  FrameLayout frame_layout = layout(*frame);
  for (std::size_t k = count; k < frame->system_entries.size(); ++k) {
    std::string_view raw = frame->system_entries[k].raw;
    frame->fixed.chars -= count_code_points(raw);
    frame->fixed.bytes -= raw.size();
    if (frame->meter) frame->fixed.tokens -= fixed_tokens(*frame->meter, raw);
    std::erase_if(frame_layout.fixed_json, [&](std::string_view j) { return j.data() == raw.data() && j.size() == raw.size(); });
  }
  frame->system_entries.resize(count);
  set_layout(*frame, std::move(frame_layout));
  return with_messages_at(Conversation(std::move(frame), {}), std::move(messages), std::move(slots));
}

bool ConversationHost::unchanged_from_input(const Conversation& c) {
  const FrameLayout& frame_layout = layout(*c.frame_);
  const auto& original = frame_layout.original;
  if (frame_layout.buffer == nullptr || original.size() != c.messages_.size()) return false;
  for (std::size_t i = 0; i < c.messages_.size(); ++i)
    if (c.messages_[i] != original[i]) return false;
  for (std::size_t k = 0; k < c.slots_.size(); ++k)
    if (c.slots_[k] != c.frame_->system_entries[k].slot) return false;
  return true;
}

Conversation ConversationHost::in_frame_of(const StageResult& result, const Conversation& committed) {
  if (result.kind_ != StageResult::Kind::candidate) return committed;
  if (result.built_ && &result.built_->frame() == &committed.frame()) return with_system_entries_placed_from(*result.built_, committed);
  return committed.with_messages(result.messages());
}

std::vector<std::string_view> Conversation::jsonl_pieces(std::size_t begin, std::size_t end) const {
  std::vector<std::string_view> out;
  out.reserve(2 * (end - begin));
  for (std::size_t i = begin; i < end; ++i) {
    out.push_back(messages_[i]->raw());
    out.push_back("\n");
  }
  return out;
}

std::vector<std::string_view> Conversation::pieces() const {
  const FrameLayout& frame_layout = ConversationHost::layout(*frame_);
  if (ConversationHost::unchanged_from_input(*this)) return {*frame_layout.buffer};
  const auto& entries = frame_->system_entries;
  std::vector<std::string_view> out;
  out.reserve(2 * (messages_.size() + entries.size()) + 2);
  out.push_back(frame_layout.prefix);
  bool first = true;
  auto add = [&](std::string_view raw) {
    if (!first) out.push_back(frame_layout.separator);
    out.push_back(raw);
    first = false;
  };
  // Entries k…end-1 share one slot: one entry holding their text blocks in order.
  auto add_joined = [&](std::size_t k, std::size_t end) {
    add(R"({"role":"system","content":[)");
    bool any = false;
    for (std::size_t j = k; j < end; ++j) {
      if (entries[j].blocks.empty()) continue;  // an entry with no blocks adds none
      if (any) out.push_back(",");
      out.push_back(entries[j].blocks);
      any = true;
    }
    out.push_back("]}");
  };
  // An unplaced entry (only in a candidate the structure checker refuses) is written last rather
  // than lost.
  std::size_t k = 0;
  for (std::size_t i = 0; i <= messages_.size(); ++i) {
    while (k < entries.size() && slots_[k] != kUnplaced && slots_[k] <= i) {
      std::size_t end = k + 1;
      while (end < entries.size() && slots_[end] == slots_[k] && frame_layout.entry_placement == SystemEntryPlacement::messages_api) ++end;
      if (end == k + 1) add(entries[k].raw);
      else add_joined(k, end);
      k = end;
    }
    if (i < messages_.size()) add(messages_[i]->raw());
  }
  for (; k < entries.size(); ++k) add(entries[k].raw);
  out.push_back(frame_layout.suffix);
  return out;
}

std::string Conversation::serialize() const {
  std::vector<std::string_view> parts = pieces();
  std::size_t total = 0;
  for (std::string_view p : parts) total += p.size();
  std::string out;
  out.reserve(total);
  for (std::string_view p : parts) out += p;
  return out;
}

}  // namespace compactor
