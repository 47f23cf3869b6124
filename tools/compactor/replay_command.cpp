// compactor replay --through URL SESSION [--header "NAME: VALUE"]… [--model NAME] [--max-tokens N] [--timeout S]
// Drives a running `compactor serve` with a recorded session, call by call, as the agent that
// lived it would (bench/agent_request.hpp), and prints what serve said of each call.
#include "command_line.hpp"
#include "commands.hpp"

#include "bench/agent_request.hpp"
#include "bench/replay.hpp"
#include "bench/session_read.hpp"
#include "host/exit_code.hpp"

#include <curl/curl.h>
#include <fmt/core.h>

#include <map>
#include <optional>
#include <vector>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"(usage: compactor replay --through URL SESSION [--header "NAME: VALUE"]… [--model NAME]
                        [--max-tokens N] [--timeout SECONDS]

Sends a recorded session (any file `compactor bench` reads: a Claude Code log, a messages array,
a request body…) to a running `compactor serve` at URL, call by call, as the agent that lived it
would: before each assistant message of the original, POST URL/v1/messages with the whole
uncompacted history up to it (the original answers played back as the assistant messages, whatever
serve's upstream answers) and the cache_control breakpoint on the newest message only, as Claude
Code moves it. A session of another API goes as its messages in the Messages API's form.

Prints one line per call (the messages and bytes sent, the HTTP status, every x-compactor-* header
serve answered: what it did with the call), then a summary line.

options:
  --through URL      serve's address (http://HOST:PORT)
  --header H         an HTTP header sent with every call, "NAME: VALUE" (repeatable), e.g. the
                     x-compactor-token of a serve with clients, or x-api-key
  --model NAME       the model of a session that names none (default claude-sonnet-4-5)
  --max-tokens N     max_tokens of a session's body that has none (default 1024)
  --timeout SECONDS  the most a call may take (default 300)

exit codes: 0 every call answered 2xx; 1 a call answered an error status (every call is still
sent); 2 bad input (a session that cannot be read, a bad option); 3 serve could not be reached
(nothing more is sent).
)";

std::optional<std::uint64_t> parse_count(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 9) return std::nullopt;
  return std::stoull(text);
}

std::string grouped(std::uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

// One call's answer: its status and serve's x-compactor-* headers, in the order they came.
struct Answer {
  long status = 0;
  std::vector<std::pair<std::string, std::string>> compactor_headers;
  std::uint64_t body_bytes = 0;
  std::string transport_error;  // set when no answer came
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  const std::string line(data, size * count);
  const std::size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t\r\n") + 1);
    if (name.rfind("x-compactor-", 0) == 0) static_cast<Answer*>(user)->compactor_headers.emplace_back(std::move(name), std::move(value));
  }
  return size * count;
}

std::size_t on_body(char*, std::size_t size, std::size_t count, void* user) {
  static_cast<Answer*>(user)->body_bytes += size * count;
  return size * count;
}

// The calls of one replay, on one connection kept open between them (as an agent's client does).
class Client {
 public:
  Client(std::string url, curl_slist* headers, long timeout_s) : url_(std::move(url)), headers_(headers), curl_(curl_easy_init()) {
    if (curl_ == nullptr) return;
    curl_easy_setopt(curl_, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl_, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, on_body);
  }
  ~Client() {
    if (curl_ != nullptr) curl_easy_cleanup(curl_);
    curl_slist_free_all(headers_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  Answer post(const std::string& body) {
    Answer a;
    if (curl_ == nullptr) {
      a.transport_error = "libcurl could not start (libcurl.so.4)";
      return a;
    }
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl_, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &a);
    if (const CURLcode code = curl_easy_perform(curl_); code != CURLE_OK) {
      a.transport_error = curl_easy_strerror(code);
      return a;
    }
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &a.status);
    return a;
  }

 private:
  std::string url_;
  curl_slist* headers_;
  CURL* curl_;
};

struct Options {
  std::string url, session;
  bench::RequestFields fields{"claude-sonnet-4-5", 1024};
  long timeout_s = 300;
  std::vector<std::string> headers;
};

// The options, or the usage error.
std::string read_options(const ParsedArgs& args, Options& o) {
  auto url = args.get("through");
  if (!url) return "--through URL is required";
  if (url->rfind("http://", 0) != 0 && url->rfind("https://", 0) != 0) return "--through takes an http:// or https:// URL, got \"" + *url + "\"";
  if (args.positional.size() != 1) return args.positional.empty() ? "a SESSION file is required" : "one SESSION file, got " + std::to_string(args.positional.size());
  o.url = *url;
  while (!o.url.empty() && o.url.back() == '/') o.url.pop_back();
  o.session = args.positional.front();
  if (auto m = args.get("model")) o.fields.model = *m;
  if (auto t = args.get("max-tokens")) {
    if (!parse_count(*t) || *parse_count(*t) == 0) return "--max-tokens takes a positive number, got \"" + *t + "\"";
    o.fields.max_tokens = *parse_count(*t);
  }
  if (auto t = args.get("timeout")) {
    if (!parse_count(*t) || *parse_count(*t) == 0) return "--timeout takes a positive number of seconds, got \"" + *t + "\"";
    o.timeout_s = static_cast<long>(*parse_count(*t));
  }
  for (const auto& h : args.has("header") ? args.options.at("header") : std::vector<std::string>{}) {
    if (h.find(':') == std::string::npos || h.find_first_of("\r\n") != std::string::npos) return "--header takes \"NAME: VALUE\", got \"" + h + "\"";
    o.headers.push_back(h);
  }
  return "";
}

std::string summary(const Options& o, std::size_t calls, std::size_t ok, std::uint64_t bytes, const std::map<std::string, std::size_t>& statuses) {
  std::string by_status;
  for (const auto& [status, n] : statuses) by_status += fmt::format("{}{} {}", by_status.empty() ? "" : ", ", status, n);
  return fmt::format("replayed {} call{} of {} through {}: {} answered 2xx, {} with an error; x-compactor-status: {}; {} bytes sent\n", calls,
                     calls == 1 ? "" : "s", o.session, o.url, ok, calls - ok, by_status.empty() ? "none" : by_status, grouped(bytes));
}

int replay(const Options& o) {
  auto session = bench::read_session(o.session);
  if (!session) {
    fmt::print(stderr, "compactor replay: {}\n", session.error().message);
    return kExitBadInput;
  }
  const Conversation& c = *session->result.conversation;
  const std::vector<std::size_t> answers = bench::call_answers(c);
  curl_slist* headers = curl_slist_append(nullptr, "content-type: application/json");
  headers = curl_slist_append(headers, "anthropic-version: 2023-06-01");
  for (const auto& h : o.headers) headers = curl_slist_append(headers, h.c_str());
  curl_global_init(CURL_GLOBAL_DEFAULT);
  Client client(o.url + "/v1/messages", headers, o.timeout_s);
  bench::RequestFields fields = o.fields;
  if (!session->model.empty()) fields.model = session->model;  // the log's model, as the agent sent it
  std::size_t ok = 0;
  std::uint64_t bytes = 0;
  std::map<std::string, std::size_t> statuses;
  for (std::size_t k = 0; k < answers.size(); ++k) {
    auto body = bench::agent_request(c, answers[k], fields);
    if (!body) {
      fmt::print(stderr, "compactor replay: {}: {}\n", o.session, body.error().message);
      return kExitBadInput;
    }
    const Answer a = client.post(*body);
    if (!a.transport_error.empty()) {
      fmt::print(stderr, "compactor replay: call {} of {}: {}: {}\n", k + 1, answers.size(), o.url, a.transport_error);
      fmt::print("{}", summary(o, k, ok, bytes, statuses));
      return kExitPluginError;
    }
    bytes += body->size();
    ok += a.status >= 200 && a.status < 300;
    std::string said;
    for (const auto& [name, value] : a.compactor_headers) {
      said += fmt::format(", {}: {}", name, value);
      if (name == "x-compactor-status") ++statuses[value];
    }
    fmt::print("call {}/{}: {} messages, {} bytes: {}{}\n", k + 1, answers.size(), answers[k], grouped(body->size()), a.status,
               said.empty() ? ", no x-compactor-* header (not compactor serve?)" : said);
  }
  fmt::print("{}", summary(o, answers.size(), ok, bytes, statuses));
  return ok == answers.size() ? kExitOk : kExitNotDone;
}

}  // namespace

int replay_command(int argc, char** argv) {
  const Command command{"replay", kHelp};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2, {{"through"}, {"header", true, true}, {"model"}, {"max-tokens"}, {"timeout"}}, exit_code);
  if (!args) return exit_code;
  Options o;
  if (auto error = read_options(*args, o); !error.empty()) return command.usage_error(error);
  return replay(o);
}

}  // namespace compactor::cli
