#include "model_summarizer.hpp"

#include "http_client.hpp"
#include "transcript.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

namespace compactor::http_summary {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Settings {
  Provider provider = Provider::anthropic;
  std::string model, base_url, api_key_env;
  std::int64_t max_output_tokens = 0, max_input_tokens = 0, retry_base_ms = 0;
  int retries = 0;
  double timeout_s = 0, connect_timeout_s = 0, max_total_s = 0;

  std::string kind() const { return provider == Provider::anthropic ? "anthropic" : "openai"; }
  std::string url() const {
    std::string base = base_url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    // OpenAI-compatible servers are often given with their /v1 already (Ollama's docs do).
    const bool has_v1 = base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0;
    if (!has_v1) base += "/v1";
    return base + (provider == Provider::anthropic ? "/messages" : "/chat/completions");
  }
};

// One line of a provider's error body: "type: message", clipped; never the request.
std::string provider_error(const json::value* body) {
  if (body == nullptr || !body->is_object()) return "";
  const json::value* error = body->get_object().if_contains("error");
  if (error == nullptr || !error->is_object()) return "";
  auto field = [&](const char* key) -> std::string {
    const json::value* v = error->get_object().if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
  };
  std::string type = field("type"), code = field("code"), message = field("message");
  std::replace(message.begin(), message.end(), '\n', ' ');
  if (message.size() > 300) message = message.substr(0, 300) + "…";
  std::string out = type;
  if (!code.empty() && code != type) out += (out.empty() ? "" : "/") + code;
  if (!message.empty()) out += (out.empty() ? "" : ": ") + message;
  return out;
}

bool is_context_overflow(Provider provider, long status, const json::value* body) {
  if (body == nullptr || !body->is_object()) return false;
  const json::value* error = body->get_object().if_contains("error");
  if (error == nullptr || !error->is_object()) return false;
  const auto& e = error->get_object();
  auto text = [&](const char* key) {
    const json::value* v = e.if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  if (provider == Provider::anthropic) return status == 400 && text("message").find("prompt is too long") != std::string::npos;
  return text("code") == "context_length_exceeded";
}

struct Reply {
  std::string text;
  std::uint64_t input_tokens = 0, output_tokens = 0;
};

std::uint64_t uint_at(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64() && v->get_int64() > 0) return static_cast<std::uint64_t>(v->get_int64());
  return 0;
}

// A 200 response read as a summary, or why it is not one. Usage is read even when the text is
// refused: the call was billed.
Expected<Reply> read_reply(Provider provider, const json::value& body, std::int64_t max_output_tokens, Reply& usage) {
  if (!body.is_object()) return Error{"the response is not a JSON object"};
  const json::object& o = body.get_object();
  std::string stop;
  Reply reply;
  if (provider == Provider::anthropic) {
    if (const json::value* u = o.if_contains("usage"); u != nullptr && u->is_object()) {
      const auto& uo = u->get_object();
      usage.input_tokens = uint_at(uo, "input_tokens") + uint_at(uo, "cache_creation_input_tokens") + uint_at(uo, "cache_read_input_tokens");
      usage.output_tokens = uint_at(uo, "output_tokens");
    }
    if (const json::value* s = o.if_contains("stop_reason"); s != nullptr && s->is_string()) stop = s->get_string();
    const json::value* content = o.if_contains("content");
    if (content == nullptr || !content->is_array()) return Error{"the response has no content array"};
    for (const auto& block : content->get_array())
      if (block.is_object() && block.get_object().contains("type") && block.get_object().at("type") == "text" &&
          block.get_object().contains("text") && block.get_object().at("text").is_string())
        reply.text += block.get_object().at("text").get_string();
    if (stop == "max_tokens")
      return Error{fmt::format("the model stopped at max_tokens ({}) before the summary was complete", max_output_tokens)};
    if (stop != "end_turn") return Error{"the model stopped with stop_reason \"" + stop + "\", not end_turn"};
  } else {
    if (const json::value* u = o.if_contains("usage"); u != nullptr && u->is_object()) {
      usage.input_tokens = uint_at(u->get_object(), "prompt_tokens");
      usage.output_tokens = uint_at(u->get_object(), "completion_tokens");
    }
    const json::value* choices = o.if_contains("choices");
    if (choices == nullptr || !choices->is_array() || choices->get_array().empty() || !choices->get_array()[0].is_object())
      return Error{"the response has no choices"};
    const json::object& choice = choices->get_array()[0].get_object();
    if (const json::value* f = choice.if_contains("finish_reason"); f != nullptr && f->is_string()) stop = f->get_string();
    if (const json::value* m = choice.if_contains("message"); m != nullptr && m->is_object())
      if (const json::value* c = m->get_object().if_contains("content"); c != nullptr && c->is_string()) reply.text = c->get_string();
    if (stop == "length")
      return Error{fmt::format("the model stopped at max_tokens ({}) before the summary was complete", max_output_tokens)};
    if (stop != "stop") return Error{"the model stopped with finish_reason \"" + stop + "\", not stop"};
  }
  if (reply.text.find_first_not_of(" \n\t\r") == std::string::npos) return Error{"the model returned an empty summary"};
  if (reply.text.find("summary>>>") != std::string::npos)
    return Error{"the model's summary contains the untrusted block's closing delimiter"};
  reply.input_tokens = usage.input_tokens;
  reply.output_tokens = usage.output_tokens;
  return reply;
}

class ModelSummarizer final : public Summarizer {
 public:
  explicit ModelSummarizer(Settings s) : s_(std::move(s)) {}

  Expected<Summary> summarize(const SummaryRequest& r) override {
    const char* key = s_.api_key_env.empty() ? nullptr : std::getenv(s_.api_key_env.c_str());
    if (s_.provider == Provider::anthropic && (key == nullptr || *key == '\0'))
      return Error{"the environment variable " + s_.api_key_env + " (summarizer.api_key_env) is not set or empty; no request was sent"};
    const std::int64_t max_output = s_.max_output_tokens > 0 ? s_.max_output_tokens
                                                             : std::max<std::int64_t>(256, static_cast<std::int64_t>(r.max_chars + 1) / 2);
    RenderedTranscript transcript = render(r.conversation, r.begin, r.end);
    std::string so_far = inner_summary(transcript.previous_summary);
    const std::string system = system_prompt(r.max_chars);
    // Input tokens are estimated at 3 chars each (on the safe side: prose runs near 4, code near
    // 3); what the prompts and the summary so far take is left out of the transcript's share.
    std::string request;  // the substantive prompt, then the newest when they differ
    for (const std::string& text : r.requests) request += (request.empty() ? "" : "\n\n") + text;
    const std::int64_t fixed = static_cast<std::int64_t>(system.size() + request.size() + r.max_chars + 1000);
    const std::int64_t room = s_.max_input_tokens * 3 - fixed;
    if (room < 4000)
      return Error{fmt::format("summarizer.max_input_tokens {} leaves no room for a transcript beside the prompts; raise it",
                               s_.max_input_tokens)};
    std::vector<std::string> parts = split_into_parts(transcript.entries, static_cast<std::size_t>(room));
    for (std::size_t k = 0; k < parts.size(); ++k) {
      auto text = call(system, user_prompt(request, so_far, parts[k], k + 1, parts.size()), max_output, key);
      if (!text) {
        if (parts.size() == 1) return text.error();
        return Error{fmt::format("part {} of {}: {}", k + 1, parts.size(), text.error().message)};
      }
      so_far = std::move(text).value();
    }
    return Summary{so_far, false};
  }

  std::vector<SummarizerCall> take_calls() override {
    std::lock_guard lock(mutex_);
    return std::exchange(calls_, {});
  }

 private:
  // The text between a summary message's fences, or the whole message when it has none.
  static std::string inner_summary(const std::string& message) {
    std::size_t from = message.find("<<<summary\n");
    std::size_t to = message.rfind("\nsummary>>>");
    if (from == std::string::npos || to == std::string::npos || to < from + 11) return message;
    return message.substr(from + 11, to - from - 11);
  }

  std::string body(const std::string& system, const std::string& user, std::int64_t max_output) const {
    json::object b;
    b["model"] = s_.model;
    b["max_tokens"] = max_output;
    if (s_.provider == Provider::anthropic) {
      b["system"] = system;
      b["messages"] = json::array{json::object{{"role", "user"}, {"content", user}}};
    } else {
      b["messages"] = json::array{json::object{{"role", "system"}, {"content", system}}, json::object{{"role", "user"}, {"content", user}}};
    }
    return json::serialize(b);
  }

  // One summary request, retried within the limits; recorded for the report whatever happens.
  Expected<std::string> call(const std::string& system, const std::string& user, std::int64_t max_output, const char* key) {
    const auto started = Clock::now();
    const auto deadline = started + milliseconds(static_cast<long long>(s_.max_total_s * 1000));
    http::Request request;
    request.url = s_.url();
    request.body = body(system, user, max_output);
    request.headers = {"Content-Type: application/json", "Accept: application/json", "User-Agent: compactor"};
    if (s_.provider == Provider::anthropic) {
      request.headers.push_back(std::string("x-api-key: ") + key);
      request.headers.push_back("anthropic-version: 2023-06-01");
    } else if (key != nullptr && *key != '\0') {
      request.headers.push_back(std::string("Authorization: Bearer ") + key);
    }
    request.connect_timeout = milliseconds(static_cast<long long>(s_.connect_timeout_s * 1000));

    SummarizerCall record;
    record.model = s_.model;
    const std::string where = s_.kind() + " POST " + request.url;
    std::string failure;
    int attempt = 0;
    for (;; ++attempt) {
      auto remaining = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      request.total_timeout = std::min(milliseconds(static_cast<long long>(s_.timeout_s * 1000)), remaining);
      http::Response response = http::post(request);
      bool retryable = false;
      if (!response.transport_error.empty()) {
        failure = response.timed_out ? fmt::format("no response within {} s ({})", s_.timeout_s, response.transport_error)
                                     : "connection failed: " + response.transport_error;
        retryable = true;
      } else {
        json::error_code ec;
        json::value parsed = json::parse(response.body, ec);
        const json::value* body = ec ? nullptr : &parsed;
        if (response.status == 200) {
          if (ec) {
            failure = "HTTP 200 but the body is not JSON (" + ec.message() + ")";
          } else {
            Reply usage;
            auto reply = read_reply(s_.provider, parsed, max_output, usage);
            record.input_tokens += usage.input_tokens;
            record.output_tokens += usage.output_tokens;
            if (reply) {
              finish(record, started, attempt, "ok");
              return std::move(reply->text);
            }
            failure = reply.error().message;
          }
        } else {
          std::string detail = provider_error(body);
          if (is_context_overflow(s_.provider, response.status, body))
            failure = fmt::format("context overflow: the summary request is too long for {} ({}); lower "
                                  "summarizer.max_input_tokens",
                                  s_.model, detail);
          else
            failure = fmt::format("HTTP {}{}", response.status, detail.empty() ? "" : " " + detail);
          retryable = response.status == 429 || response.status >= 500;
        }
      }
      if (!retryable || attempt >= s_.retries) {
        if (retryable && attempt > 0) failure += fmt::format(" (after {} retr{})", attempt, attempt == 1 ? "y" : "ies");
        break;
      }
      // Exponential backoff with jitter (half to all of base × 2^attempt), or the server's
      // Retry-After when it asks for longer; never past the total time limit.
      double jitter = std::uniform_real_distribution<double>(0.5, 1.0)(rng_);
      auto wait = milliseconds(static_cast<long long>(static_cast<double>(s_.retry_base_ms) * std::pow(2.0, attempt) * jitter));
      if (response.retry_after && *response.retry_after > wait) wait = *response.retry_after;
      if (Clock::now() + wait >= deadline) {
        failure += fmt::format(" (gave up after {} retr{}: the next wait of {} ms would pass max_total_s {})", attempt,
                               attempt == 1 ? "y" : "ies", wait.count(), s_.max_total_s);
        break;
      }
      std::this_thread::sleep_for(wait);
    }
    // A server may echo the key in its error text ("invalid x-api-key sk-…"): never pass it on.
    if (key != nullptr && std::strlen(key) >= 4)
      for (std::size_t at = failure.find(key); at != std::string::npos; at = failure.find(key, at))
        failure.replace(at, std::strlen(key), "[the key in " + s_.api_key_env + "]");
    finish(record, started, attempt, failure);
    return Error{where + ": " + failure};
  }

  void finish(SummarizerCall& record, Clock::time_point started, int retries, const std::string& outcome) {
    record.retries = retries;
    record.outcome = outcome;
    record.latency_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - started).count();
    std::lock_guard lock(mutex_);
    calls_.push_back(record);
  }

  Settings s_;
  std::mt19937 rng_{std::random_device{}()};
  std::mutex mutex_;
  std::vector<SummarizerCall> calls_;
};

}  // namespace

ParamSchema model_summarizer_params(Provider provider) {
  const bool anthropic = provider == Provider::anthropic;
  return {
      ParamSpec::required(ParamType::string, "model", "the model that writes summaries"),
      ParamSpec::string("base_url", "the API's base URL (/v1/… is appended)",
                        anthropic ? "https://api.anthropic.com" : "https://api.openai.com"),
      ParamSpec::string("api_key_env",
                        anthropic ? "the environment variable holding the API key (required by the API)"
                                  : "the environment variable holding the API key (sent as a bearer token when set; local "
                                    "servers need none)",
                        anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY"),
      ParamSpec::integer("max_output_tokens", "output limit of one summary request; 0: half the stage's max_chars", 0)
          .at_least(0)
          .at_most(200000),
      ParamSpec::integer("max_input_tokens", "input budget of one request; a longer transcript is summarized in parts", 100000)
          .at_least(2000)
          .at_most(10000000),
      ParamSpec::number("timeout_s", "time limit of one attempt, seconds", 60.0).at_least(0.001).at_most(3600),
      ParamSpec::number("connect_timeout_s", "time limit to connect, seconds", 10.0).at_least(0.001).at_most(600),
      ParamSpec::integer("retries", "attempts after the first on 429, 5xx, 529, timeouts and connection errors", 3)
          .at_least(0)
          .at_most(10),
      ParamSpec::integer("retry_base_ms", "first backoff wait; doubled per retry, with jitter", 1000).at_least(1).at_most(600000),
      ParamSpec::number("max_total_s", "time limit of one summary request, retries and waits included, seconds", 300.0)
          .at_least(0.001)
          .at_most(36000),
  };
}

SummarizerInfo model_summarizer_info(Provider provider) {
  SummarizerInfo info;
  info.name = provider == Provider::anthropic ? "anthropic" : "openai";
  info.description = provider == Provider::anthropic
                         ? "a model through the Anthropic Messages API (POST /v1/messages)"
                         : "a model through any OpenAI-compatible /v1/chat/completions server (OpenAI, vLLM, llama.cpp, Ollama)";
  info.params = model_summarizer_params(provider);
  info.create = [provider](const ParamValues& p) -> Expected<std::unique_ptr<Summarizer>> {
    Settings s;
    s.provider = provider;
    s.model = p.string("model");
    s.base_url = p.string("base_url");
    if (s.base_url.rfind("http://", 0) != 0 && s.base_url.rfind("https://", 0) != 0)
      return Error{"base_url \"" + s.base_url + "\" is not an http:// or https:// URL"};
    s.api_key_env = p.string("api_key_env");
    s.max_output_tokens = p.integer("max_output_tokens");
    s.max_input_tokens = p.integer("max_input_tokens");
    s.timeout_s = p.number("timeout_s");
    s.connect_timeout_s = p.number("connect_timeout_s");
    s.retries = static_cast<int>(p.integer("retries"));
    s.retry_base_ms = p.integer("retry_base_ms");
    s.max_total_s = p.number("max_total_s");
    return std::unique_ptr<Summarizer>(std::make_unique<ModelSummarizer>(std::move(s)));
  };
  return info;
}

}  // namespace compactor::http_summary
