#include "compactor/conversation.hpp"

namespace compactor {

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
  for (const MessagePtr& m : messages_) sizes_ += m->sizes();
  if (const Meter* meter = frame_->meter.get())
    for (const MessagePtr& m : messages_) sizes_.tokens += meter->tokens(*m);
}

std::uint64_t Conversation::size_of(const Message& message, SizeUnit unit) const {
  if (unit != SizeUnit::tokens) return message.sizes().in(unit);
  return frame_->meter ? frame_->meter->tokens(message) : 0;
}

Conversation Conversation::with_meter(std::shared_ptr<const Meter> meter) const {
  auto frame = std::make_shared<ConversationFrame>(*frame_);
  frame->fixed.tokens = 0;
  if (meter)
    for (std::string_view json : frame->fixed_json) frame->fixed.tokens += meter->count_text(json);
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
