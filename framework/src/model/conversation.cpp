#include "compactor/conversation.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

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

// `system` (a string, or text blocks) and `tools` (each tool's JSON), as the model reads them.
std::uint64_t fixed_tokens(const Meter& meter, std::string_view json) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  if (ec) return meter.count_text(json);
  if (const auto* s = v.if_string()) return meter.count_text(*s);
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
  return Conversation(std::move(frame), messages_);
}

Conversation Conversation::with_messages(std::vector<MessagePtr> messages) const {
  return Conversation(frame_, std::move(messages));
}

bool Conversation::unchanged_from_input() const {
  const auto& original = frame_->original;
  if (frame_->buffer == nullptr || original.size() != messages_.size()) return false;
  for (std::size_t i = 0; i < messages_.size(); ++i)
    if (messages_[i] != original[i]) return false;
  return true;
}

std::string Conversation::serialize() const {
  if (unchanged_from_input()) return *frame_->buffer;
  std::size_t total = frame_->prefix.size() + frame_->suffix.size();
  for (const MessagePtr& m : messages_) total += m->raw().size() + frame_->separator.size();
  std::string out;
  out.reserve(total);
  out += frame_->prefix;
  for (std::size_t i = 0; i < messages_.size(); ++i) {
    if (i > 0) out += frame_->separator;
    out += messages_[i]->raw();
  }
  out += frame_->suffix;
  return out;
}

}  // namespace compactor
