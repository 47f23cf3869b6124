// The Meter base: a message's count, cached in the message under the meter's tag. The meters
// themselves (chars4, tokenizers, calibrated) are in meter/.
#include "compactor/meter.hpp"

#include <boost/json/serialize.hpp>

#include <atomic>

namespace compactor {
namespace {

// A cached count: the meter's tag in the top 24 bits, the count in the low 40.
constexpr int kCountBits = 40;
constexpr std::uint64_t kCountMask = (std::uint64_t{1} << kCountBits) - 1;

std::uint64_t next_cache_tag() {
  static std::atomic<std::uint64_t> next{1};
  return (next++ & 0xFFFFFF) << kCountBits;
}

std::uint64_t count_json(const Meter& meter, const boost::json::value& value) {
  if (const auto* s = value.if_string()) return meter.count_text(*s);
  return meter.count_text(boost::json::serialize(value));
}

// tool_result content: a string, or blocks of text and images.
std::uint64_t count_result_content(const Meter& meter, const boost::json::value* content) {
  if (content == nullptr) return 0;
  const auto* blocks = content->if_array();
  if (blocks == nullptr) return count_json(meter, *content);
  std::uint64_t n = 0;
  for (const auto& b : *blocks) {
    const auto* o = b.if_object();
    const auto* type = o && o->contains("type") ? o->at("type").if_string() : nullptr;
    if (type && (*type == "image" || *type == "document"))
      n += kMediaBlockTokens;
    else if (type && *type == "text" && o->contains("text") && o->at("text").is_string())
      n += meter.count_text(o->at("text").get_string());
    else
      n += count_json(meter, b);
  }
  return n;
}

}  // namespace

Meter::Meter(const MeterKey&) : cache_tag_(next_cache_tag()) {}

std::uint64_t Meter::tokens(const Message& message) const {
  std::uint64_t cached = message.cached_tokens_.load(std::memory_order_relaxed);
  if ((cached & ~kCountMask) == cache_tag_) return cached & kCountMask;
  std::uint64_t n = count_message(message);
  message.cached_tokens_.store(cache_tag_ | (n & kCountMask), std::memory_order_relaxed);
  return n;
}

std::uint64_t Meter::count_message(const Message& message) const {
  std::uint64_t n = 0;
  for (const Block& b : message.blocks()) {
    switch (b.kind()) {
      case BlockKind::text: n += count_text(b.text()); break;
      case BlockKind::thinking: n += count_text(b.thinking()); break;
      case BlockKind::redacted_thinking: n += count_text(b.string_field("data")); break;
      case BlockKind::image:
      case BlockKind::document: n += kMediaBlockTokens; break;
      case BlockKind::tool_use:
      case BlockKind::server_tool_use:
        n += count_text(b.name());
        if (b.input() != nullptr) n += count_json(*this, *b.input());
        break;
      case BlockKind::tool_result:
      case BlockKind::server_tool_result: n += count_result_content(*this, b.content()); break;
      case BlockKind::other:
        if (b.json() != nullptr) n += count_text(boost::json::serialize(*b.json()));
        break;
    }
  }
  return n;
}

}  // namespace compactor
