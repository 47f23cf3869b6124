// A meter counts tokens for `budget.unit: tokens`. Each message's count is cached in the message
// (tagged with the meter that made it), so a run recounts only the messages a stage changed.
// The host makes the one the config's `meter:` section names; a stage reaches it only through
// Conversation::size_of and size_in. Meters are the host's kinds only: the constructor takes a
// key no plugin can name, since nothing a plugin could give a meter to would use it (a config
// names the host's kinds, and the test kit hands a test one of them: testkit::meter).
#pragma once

#include "compactor/error.hpp"
#include "compactor/message.hpp"

#include <cstdint>
#include <string_view>

namespace compactor {

// An image or document block counts as this many tokens: kMediaBlockSize chars / 4.
inline constexpr std::uint64_t kMediaBlockTokens = kMediaBlockSize / 4;

class MeterKey;  // the host's

class Meter {
 public:
  explicit Meter(const MeterKey& key);
  virtual ~Meter() = default;
  Meter(const Meter&) = delete;
  Meter& operator=(const Meter&) = delete;

  virtual std::string_view kind() const = 0;
  // Tokens of a piece of UTF-8 text.
  virtual std::uint64_t count_text(std::string_view utf8) const = 0;

  // Tokens of a message's content, cached in the message. What is counted: the text of text and
  // thinking blocks, a tool_use's name and JSON input, a tool_result's content, any other
  // block's JSON; images and documents count kMediaBlockTokens. Role and framing tokens are left
  // to calibration.
  std::uint64_t tokens(const Message& message) const;

 protected:
  virtual std::uint64_t count_message(const Message& message) const;

 private:
  std::uint64_t cache_tag_;  // in the top bits of a message's cached count
};

}  // namespace compactor
