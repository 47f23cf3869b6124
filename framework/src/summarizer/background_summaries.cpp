#include "summarizer/background_summaries.hpp"

namespace compactor {
namespace {

class BackgroundSummarizer final : public Summarizer {
 public:
  BackgroundSummarizer(BackgroundSummaries& source, Summarizer& stand_in) : source_(source), stand_in_(stand_in) {}

  Expected<Summary> summarize(const SummaryRequest& request) override {
    BackgroundSummaries::Found found = source_.find_or_start(request);
    last_stand_in_.clear();
    if (found.summary) return Summary{std::move(*found.summary), false};
    auto summary = stand_in_.summarize(request);
    if (summary) last_stand_in_ = std::move(found.key);
    return summary;
  }

  const std::string& last_stand_in() const { return last_stand_in_; }

 private:
  BackgroundSummaries& source_;
  Summarizer& stand_in_;
  std::string last_stand_in_;
};

}  // namespace

std::string stand_in_key(const Summarizer* summarizer) {
  const auto* background = dynamic_cast<const BackgroundSummarizer*>(summarizer);
  return background != nullptr ? background->last_stand_in() : std::string();
}

std::unique_ptr<Summarizer> make_background_summarizer(BackgroundSummaries& source, Summarizer& stand_in) {
  return std::make_unique<BackgroundSummarizer>(source, stand_in);
}

}  // namespace compactor
