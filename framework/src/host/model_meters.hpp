// The meters a request's model is counted with when the config says `meter: {kind: auto}` (and
// the bench's defaults): o200k for an OpenAI model, else the calibrated meter with the fit of the
// model's family, else the fit's default family. Made once and shared by every run and thread.
#pragma once

#include "compactor/error.hpp"
#include "compactor/meter.hpp"
#include "pricing/price_table.hpp"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace compactor {

struct ModelMeters {
  std::map<std::string, std::shared_ptr<const Meter>> by_name;  // "o200k", "calibrated/sonnet"…
  std::string default_family;                                   // the calibrated fit's
  std::string missing;  // why a kind was not made (its meter is then null), or empty

  // The meter of a model, by name ("o200k", "calibrated/opus") and itself: o200k for a model of a
  // gpt family (or, when the price is unknown, when `openai` says the session or API is
  // OpenAI's), else calibrated with the model family's fit, or the fit's default family. Null when
  // the kind needed was not made.
  std::pair<std::string, std::shared_ptr<const Meter>> for_model(const ModelPrice* price, bool openai) const;
};

// The meters of `kinds` (chars4, cl100k, o200k, claude-legacy, calibrated: one per family of the
// fit in `fit_path`). The error names the file or the kind.
Expected<ModelMeters> make_model_meters(const std::vector<std::string>& kinds, const std::string& fit_path);

}  // namespace compactor
