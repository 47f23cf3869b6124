// The meters the host can configure: chars4 (chars/4, the usual guess), cl100k and o200k
// (OpenAI's tokenizers, exact), claude-legacy (@anthropic-ai/tokenizer, exact for Claude 1–2,
// close for later models), and calibrated (a linear fit of an exact meter to the usage Claude
// Code recorded, made by `compactor calibrate`).
#pragma once

#include "compactor/error.hpp"
#include "compactor/meter.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

struct MeterSpec {
  std::string kind;      // one of meter_kinds()
  std::string file;      // calibrated: the fit (required); exact kinds: the rank file (optional)
  std::string family;    // calibrated: which model family's fit; empty = the fit's default
};

std::vector<std::string_view> meter_kinds();

// Loads a meter; the error names the file and what is wrong with it.
Expected<std::shared_ptr<const Meter>> make_meter(const MeterSpec& spec);

}  // namespace compactor
