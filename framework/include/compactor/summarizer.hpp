// The summarizer interface. A backend turns the older part of a conversation into a short,
// factual summary; the `summarize`, `reactive_compact` and `compact_request` stages decide what
// to summarize, validate what comes back and build the summary message. Backends are built in
// (`extractive`, deterministic and offline, the default) or come from plugins
// (`compactor_summarizer_<kind>.so`, registered with PluginRegistrar::add_summarizer).
#pragma once

#include "compactor/conversation.hpp"
#include "compactor/error.hpp"
#include "compactor/factory.hpp"
#include "compactor/param_schema.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

struct SummaryRequest {
  const Conversation& conversation;
  std::size_t end = 0;              // summarize messages [begin, end)
  std::vector<std::string> requests;  // for context only: the stage quotes them verbatim itself
  std::size_t max_chars = 1000;     // what the stage will accept
  std::size_t begin = 0;            // an appended summary: the summary messages before it stay, unread
};

struct Summary {
  std::string text;
  bool truncated = false;  // the backend stopped early (an HTTP backend's stop_reason max_tokens)
};

// One request a backend sent to a model, successful or not, for the run report's accounting.
struct SummarizerCall {
  std::string model;
  std::uint64_t input_tokens = 0;   // as the API reported them (0 when it reported none)
  std::uint64_t output_tokens = 0;
  std::int64_t latency_ms = 0;      // the whole call, retries and waits included
  int retries = 0;                  // attempts after the first
  std::string outcome = "ok";       // "ok", or why it did not give a summary
};

class Summarizer {
 public:
  virtual ~Summarizer() = default;
  virtual Expected<Summary> summarize(const SummaryRequest& request) = 0;
  // The model calls made since the last take (the host reports them after every run). A backend
  // that calls no model has none.
  virtual std::vector<SummarizerCall> take_calls() { return {}; }
};

using SummarizerFactory = Factory<Summarizer>;

struct SummarizerInfo {
  std::string name;  // what `summarizer.kind` names
  std::string description;
  // Validated by the host from the keys beside `kind` and `plugin` in the `summarizer:` section.
  ParamSchema params;
  SummarizerFactory create;
};

// The built-in deterministic backend: the goal (the first user request), the files and paths the
// tools touched, the tools run and which failed, and the last state (the last assistant text),
// bounded by max_chars. It reads tool inputs and the model's own text, never tool output, so no
// instruction inside a tool result can reach the summary.
std::unique_ptr<Summarizer> make_extractive_summarizer();

}  // namespace compactor
