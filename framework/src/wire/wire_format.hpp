// One wire format: everything one model API means to Compactor. An adapter recognises the API's
// requests, reads a request body into the Conversation the stages see (keeping what they must not
// touch opaque, with the message or block it came with), writes a compacted conversation back
// into the API's own form (what the pipeline left alone goes out as the client's own bytes),
// names the API's rules as checkers the host runs after every stage, says how the upstream
// refuses a context that is too long, and gives the API's shape for every error the proxy writes
// itself, and where its upstream is; and everything else a caller would otherwise ask by the API's
// name: where a request names its model, whether it asks the API to make room itself, how its
// models' tokens are counted, and the forms of input its requests and its agents' logs take. No
// caller compares adapters: `serve` routes by adapter, the commands read through the forms, and
// adding an API is one folder (wire/<api>/) and one registration line (docs/serve.md, "Adding a
// wire format").
#pragma once

#include "compactor/checker.hpp"
#include "compactor/conversation.hpp"
#include "compactor/error.hpp"
#include "wire/input_form.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::wire {

// One request body, read. What the write-back needs (the client's bytes, where each item came
// from) lives here, so the reading is done once per request.
class WireRequest {
 public:
  virtual ~WireRequest() = default;

  // The conversation the pipeline runs on (the Anthropic form the stages know).
  virtual const Conversation& conversation() const = 0;

  // The body to forward for `compacted` (a conversation made from conversation() by the
  // pipeline): untouched messages as the client sent them, the rest in the API's form. An error
  // when the compacted messages cannot be put back into the API's form.
  virtual Expected<std::string> write(const Conversation& compacted) const = 0;

  // Why serve forwards this request as the client sent it, with no continuity state, though it
  // reads as a conversation (a model router's call, a structured answer, a prefix cached on the
  // server); empty for the agent's conversation, which is compacted.
  virtual std::string pass_reason() const { return {}; }

  // True when write() is the compacted conversation's own serialization (the Messages API's
  // form): a caller may then write its pieces (ConversationHost::pieces) without joining them.
  virtual bool writes_model_form() const { return false; }
};

// The errors the proxy answers itself, each in the API's own error shape.
enum class ProxyError {
  overloaded,         // serve.max_queued requests already wait for a pipeline (Retry-After given)
  body_too_large,     // over serve.max_body_bytes
  upstream_failed,    // the upstream could not be reached or ended early
  pipeline_failed,    // the pipeline failed under `on_failure: reject`
  bad_request,        // a request serve cannot forward (a target that is not a path)
  unauthorized,       // no client token, or an unknown one, where serve.clients are configured
  websocket_refused,  // a WebSocket upgrade on the API's path (serve speaks HTTP: 426)
};

struct ErrorReply {
  int status = 500;
  std::string body;  // JSON in the API's shape
};

class WireFormat {
 public:
  virtual ~WireFormat() = default;

  // Its name in the continuity key, the workers' jobs and `--input-format`.
  virtual std::string_view name() const = 0;
  // Its route's name in metrics and logs (`route="messages"`).
  virtual std::string_view route() const = 0;
  // For serve's --help: the API's name ("OpenAI Chat Completions") and its conversation
  // endpoint ("POST /v1/chat/completions").
  virtual std::string_view title() const = 0;
  virtual std::string_view endpoint() const = 0;

  // Its upstream's key in `serve.upstreams` (formats of one provider share it: "openai") and the
  // provider's URL, used when the config names none.
  virtual std::string_view upstream_key() const = 0;
  virtual std::string_view default_upstream() const = 0;

  // Whether an HTTP request is this API's conversation request (the path without its query).
  virtual bool handles(std::string_view method, std::string_view path) const = 0;

  // Reads a request body. An error is one line saying what and where (the request is then
  // forwarded as it came, marked refused); it says so only for what the API itself would refuse
  // or what the adapter cannot map.
  virtual Expected<std::unique_ptr<WireRequest>> read(std::string body, const std::string& source) const = 0;

  // The API's rules for a history, as checkers: the host runs them on the input and after every
  // stage, like the built-in invariants, so a stage that breaks one is rejected.
  virtual std::vector<CheckerPtr> rules() const = 0;

  // True when the upstream's answer says the context is too long (the proxy then runs
  // on_prompt_too_long and retries once).
  virtual bool context_refusal(int status, std::string_view body) const = 0;

  // The proxy's own error in the API's shape.
  virtual ErrorReply error_reply(ProxyError kind, std::string_view message) const = 0;

  // Why a request this format handles is forwarded untouched (its history is held by the
  // upstream, so there is nothing here to compact), or nothing.
  virtual std::optional<std::string> passed_through(std::string_view body) const {
    (void)body;
    return std::nullopt;
  }

  // Whether an HTTP request that is not a conversation request is still this API's (another
  // endpoint under its path): passed through to this API's upstream, marked so.
  virtual bool owns(std::string_view method, std::string_view path) const {
    (void)method;
    (void)path;
    return false;
  }

  // The model a request names in its path (Gemini's `models/M:generateContent`), or empty (the
  // body names it): its window and price are the budget's and the cost gate's.
  virtual std::string model_in_path(std::string_view path) const {
    (void)path;
    return {};
  }

  // True when the upstream may refuse the context at the start of a 2xx event stream (the
  // first event then says so): the proxy holds the response head until that event has come.
  virtual bool refuses_in_stream() const { return false; }

  // The model a request body names (the Messages, Chat Completions and Responses APIs name it
  // in the body's top-level "model"), or empty: with model_in_path, what decides the window of
  // `budget: {window: auto}`, the meter of `meter: {kind: auto}` and the cost gate's price.
  virtual std::string model_named_in(std::string_view body) const;

  // Why the over-budget stages defer to the API, when the request asks the API to make room in
  // the context itself (docs/pipelines-and-stages.md): compacting the history as well would
  // break the prompt cache twice and summarize a summary. Empty when it asks for nothing that
  // makes room, or the API has no such thing.
  virtual std::string native_context(std::string_view body) const {
    (void)body;
    return {};
  }

  // True when the API's models count their tokens with OpenAI's tokenizer: a model the price
  // table does not know is then metered with o200k, not the table's default family.
  virtual bool openai_tokenizer() const { return false; }

  // The forms of input that are this API's (its request, its agents' logs), for --input-format
  // and detection (wire/input_form.hpp); each lives as long as the process.
  virtual std::vector<const InputForm*> input_forms() const { return {}; }
};

// Every wire format Compactor speaks, in routing order: the built-in ones, then those
// registered. A request no format handles or owns goes to the first one's upstream.
const std::vector<const WireFormat*>& wire_formats();

// Adds a format (its one registration line), before serve starts any thread; the format must
// live as long as the process.
void register_wire_format(const WireFormat& format);

// The distinct upstream keys of the formats, in routing order.
std::vector<std::string> upstream_keys();

// The format that handles an HTTP request, or null (then the request is passed through).
const WireFormat* wire_format_for(std::string_view method, std::string_view path);

// The format that owns an HTTP request it does not handle (see WireFormat::owns), or null.
const WireFormat* wire_format_owning(std::string_view method, std::string_view path);

// The format of that name, or null.
const WireFormat* wire_format_named(std::string_view name);

}  // namespace compactor::wire
