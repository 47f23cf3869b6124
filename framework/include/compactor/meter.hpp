// A meter counts tokens for `budget.unit: tokens`. Each message's count is cached in the message
// (tagged with the meter that made it), so a run recounts only the messages a stage changed.
// Kinds: chars4 (chars/4, the usual guess), cl100k and o200k (OpenAI's tokenizers, exact),
// claude-legacy (@anthropic-ai/tokenizer, exact for Claude 1–2, close for later models), and
// calibrated (a linear fit of an exact meter to the usage Claude Code recorded, made by
// `compactor calibrate`).
#pragma once

#include "compactor/error.hpp"
#include "compactor/message.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

// An image or document block counts as this many tokens: kMediaBlockSize chars / 4.
inline constexpr std::uint64_t kMediaBlockTokens = kMediaBlockSize / 4;

class Meter {
 public:
  Meter();
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

struct MeterSpec {
  std::string kind;      // one of meter_kinds()
  std::string file;      // calibrated: the fit (required); exact kinds: the rank file (optional)
  std::string family;    // calibrated: which model family's fit; empty = the fit's default
};

std::vector<std::string_view> meter_kinds();

// Loads a meter; the error names the file and what is wrong with it.
Expected<std::shared_ptr<const Meter>> make_meter(const MeterSpec& spec);

}  // namespace compactor
