// A summarizer backend that asks a model over HTTP: the Anthropic Messages API or any
// OpenAI-compatible /v1/chat/completions server (vLLM, llama.cpp, Ollama). It renders the
// messages (transcript.hpp), summarizes them in parts when they exceed the input budget, folding
// each part into the summary so far, retries what is worth retrying within a bounded time, and
// accepts a response only when it is a complete, non-empty summary. Everything else is an error
// value the summarizing stage turns into a decline: never an error string as a summary.
#pragma once

#include "compactor/summarizer.hpp"

namespace compactor::http_summary {

enum class Provider { anthropic, openai };

ParamSchema model_summarizer_params(Provider provider);
SummarizerInfo model_summarizer_info(Provider provider);

}  // namespace compactor::http_summary
