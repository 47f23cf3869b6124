#include "serve_server.hpp"

#include "serve_metrics.hpp"
#include "serve_state.hpp"

#include "host/child_run.hpp"
#include "model/conversation_reader.hpp"
#include "host/exit_code.hpp"
#include "import/importers.hpp"
#include "host/pipeline.hpp"
#include "host/pipeline_config.hpp"
#include "host/stderr_logger.hpp"
#include "model/json_scanner.hpp"
#include "platform/counted.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <curl/curl.h>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

namespace compactor::serve {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

std::int64_t us_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

// A header value must stay one line.
std::string header_safe(std::string text) {
  for (char& c : text)
    if (c == '\r' || c == '\n' || static_cast<unsigned char>(c) < 0x20) c = ' ';
  if (text.size() > 300) text.resize(300);
  return text;
}

std::string anthropic_error(const std::string& type, const std::string& message) {
  return json::serialize(json::object{{"type", "error"}, {"error", json::object{{"type", type}, {"message", message}}}});
}

// ---------------------------------------------------------------------------------------------
// What a config gives the server: the built pipeline, the serve settings, the state store.

struct Loaded {
  std::shared_ptr<Pipeline> pipeline;
  ServeConfig serve;
  std::string upstream, openai_upstream;
  std::unique_ptr<StateStore> state;
  std::string unit;  // the budget's unit, for the size metrics
};

struct LoadOutcome {
  std::shared_ptr<Loaded> loaded;
  std::vector<std::string> errors;
  int exit_code = 0;
};

LoadOutcome load(const ServeOptions& options) {
  LoadOutcome out;
  ConfigLoadResult result = load_pipeline_config(options.config_file);
  if (!result.config) {
    out.errors = std::move(result.errors);
    out.exit_code = result.plugin_failure ? kExitPluginError : kExitBadInput;
    return out;
  }
  auto loaded = std::make_shared<Loaded>();
  loaded->serve = result.config->serve.value_or(ServeConfig{});
  loaded->upstream = options.upstream.value_or(loaded->serve.upstream);
  loaded->openai_upstream = options.openai_upstream.value_or(loaded->serve.openai_upstream);
  if (options.listen) loaded->serve.listen = *options.listen;
  if (loaded->upstream.empty()) {
    out.errors.push_back(options.config_file + ": serve.upstream: no upstream: give --upstream URL or serve.upstream");
    out.exit_code = kExitBadInput;
    return out;
  }
  for (std::string* u : {&loaded->upstream, &loaded->openai_upstream})
    while (!u->empty() && u->back() == '/') u->pop_back();
  loaded->unit = std::string(to_string(result.config->budget.unit));
  loaded->state = std::make_unique<StateStore>(result.config->archive_dir + "/serve-state");
  auto pipeline = Pipeline::build(std::move(*result.config));
  if (!pipeline) {
    out.errors.push_back(pipeline.error().message);
    out.exit_code = kExitPluginError;
    return out;
  }
  loaded->pipeline = std::make_shared<Pipeline>(std::move(*pipeline));
  out.loaded = std::move(loaded);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The client connection: a Beast socket used synchronously by its own thread.

struct Client {
  tcp::socket& socket;
  unsigned version = 11;
  bool keep_alive = true;
  bool broken = false;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

void respond(Client& client, int status, const std::string& body, const std::string& content_type,
             const Headers& extra = {}) {
  http::response<http::string_body> res{static_cast<http::status>(status), client.version};
  res.set(http::field::content_type, content_type);
  for (const auto& [k, v] : extra) res.set(k, v);
  res.keep_alive(client.keep_alive);
  res.body() = body;
  res.prepare_payload();
  beast::error_code ec;
  http::write(client.socket, res, ec);
  if (ec) client.broken = true;
}

bool hop_by_hop(const std::string& name) {
  static const char* names[] = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
                                "upgrade", "host", "content-length", "expect", "accept-encoding", "proxy-authorization"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Forwarding through libcurl: 2xx responses pass to the client chunk by chunk as they arrive;
// any other status is buffered (errors are small), so a context-length refusal can be retried.

struct Upstream {
  int status = 0;
  Headers headers;
  std::string buffered;  // the body of a non-2xx response
  bool streamed = false; // the response went to the client as it arrived
  bool client_failed = false;
  std::string curl_error;
  Client* client = nullptr;
  Headers extra;  // our headers on the response
  bool head_sent = false;
  std::uint64_t body_bytes = 0;
};

bool send_head(Upstream& u) {
  http::response<http::empty_body> res{static_cast<http::status>(u.status), u.client->version};
  for (const auto& [k, v] : u.headers)
    if (!hop_by_hop(lower(k))) res.insert(k, v);
  for (const auto& [k, v] : u.extra) res.set(k, v);
  res.keep_alive(u.client->keep_alive);
  res.chunked(true);
  http::response_serializer<http::empty_body> sr{res};
  beast::error_code ec;
  http::write_header(u.client->socket, sr, ec);
  u.head_sent = true;
  return !ec;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& u = *static_cast<Upstream*>(user);
  std::string_view line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.rfind("HTTP/", 0) == 0) {  // a status line: a new response (after a 100, say)
    u.headers.clear();
    std::size_t sp = line.find(' ');
    u.status = sp == std::string_view::npos ? 0 : std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
  } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    u.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  return size * n;
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto& u = *static_cast<Upstream*>(user);
  std::size_t len = size * n;
  u.body_bytes += len;
  if (u.status / 100 != 2) {
    u.buffered.append(data, len);
    return len;
  }
  if (!u.head_sent && !send_head(u)) {
    u.client_failed = true;
    return 0;
  }
  u.streamed = true;
  if (len == 0) return 0;
  beast::error_code ec;
  asio::write(u.client->socket, http::make_chunk(asio::buffer(data, len)), ec);
  if (ec) {
    u.client_failed = true;
    return 0;  // the client is gone: stop reading from the upstream
  }
  return len;
}

Upstream forward(Client& client, const std::string& url, const std::string& method, const Headers& request_headers,
                 const std::string& body, std::int64_t timeout_ms, const Headers& extra) {
  Upstream u;
  u.client = &client;
  u.extra = extra;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) {
    u.curl_error = "cannot create an HTTP client";
    return u;
  }
  curl_slist* list = nullptr;
  for (const auto& [k, v] : request_headers)
    if (!hop_by_hop(lower(k))) list = curl_slist_append(list, (k + ": " + v).c_str());
  list = curl_slist_append(list, "Expect:");
  if (body.empty()) list = curl_slist_append(list, "Content-Type:");
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);  // a redirect would resend the key elsewhere
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &u);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &u);
  if (method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else if (method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK && !u.client_failed) u.curl_error = curl_easy_strerror(rc);
  // An empty 2xx body still owes the client its response.
  if (rc == CURLE_OK && u.status / 100 == 2 && !u.head_sent && !send_head(u)) u.client_failed = true;
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return u;
}

// Ends a streamed response, or writes a buffered one; an upstream that failed before answering is
// a 502 in the Anthropic error shape.
void finish(Client& client, Upstream& u) {
  beast::error_code ec;
  if (u.head_sent) {
    if (u.client_failed || !u.curl_error.empty()) {
      client.broken = true;  // cut mid-stream: closing tells the client the body is incomplete
      return;
    }
    asio::write(client.socket, http::make_chunk_last(), ec);
    if (ec) client.broken = true;
    return;
  }
  if (u.client_failed) {
    client.broken = true;
    return;
  }
  if (!u.curl_error.empty() || u.status == 0) {
    Headers extra = u.extra;
    respond(client, 502, anthropic_error("api_error", "compactor serve: upstream failed: " + u.curl_error),
            "application/json", extra);
    return;
  }
  http::response<http::string_body> res{static_cast<http::status>(u.status), client.version};
  for (const auto& [k, v] : u.headers)
    if (!hop_by_hop(lower(k))) res.insert(k, v);
  for (const auto& [k, v] : u.extra) res.set(k, v);
  res.keep_alive(client.keep_alive);
  res.body() = u.buffered;
  res.prepare_payload();
  http::write(client.socket, res, ec);
  if (ec) client.broken = true;
}

bool context_refusal(const Upstream& u) {
  if (u.status != 400 && u.status != 413) return false;
  return u.buffered.find("prompt is too long") != std::string::npos ||
         u.buffered.find("context_length_exceeded") != std::string::npos ||
         u.buffered.find("prompt_too_long") != std::string::npos;
}

// ---------------------------------------------------------------------------------------------
// Running the pipeline: in a forked child (host/child_run.hpp), one at a time, so a plugin
// that crashes or hangs fails this request open and the server lives on. The child writes a
// one-line JSON outcome and the body to send into a memfd the parent reads after it ends.

struct Compaction {
  enum Result { compacted, unchanged, refused, failed } result = failed;
  std::string body;       // what to forward (compacted or rebuilt body)
  std::string warning;    // for refused and failed
  std::string status;     // the pipeline's status (ok, over_budget, …)
  json::array stages;     // [[stage, status, us], …]
  std::uint64_t size_in = 0, size_out = 0;
  std::int64_t parse_us = 0, state_us = 0, stages_us = 0, child_us = 0;
  std::size_t covered = 0, messages = 0;  // state: request messages continued from a stored prefix
  bool state_hit = false;
};

// The client's cache_control breakpoints back on the messages that carried them (untouched ones),
// never more than the API's 4 in all (system and tools counted); the newest are kept.
std::vector<MessagePtr> restore_breakpoints(const std::vector<MessagePtr>& out, const std::vector<MessagePtr>& original,
                                            const std::vector<MessagePtr>& stripped, std::string_view frame_text) {
  std::map<std::string_view, MessagePtr> carried;
  for (std::size_t i = 0; i < original.size(); ++i)
    if (original[i] != stripped[i]) carried[stripped[i]->raw()] = original[i];
  std::vector<MessagePtr> result = out;
  if (carried.empty()) return result;
  std::size_t budget = 4, pos = 0;
  while ((pos = frame_text.find("\"cache_control\"", pos)) != std::string_view::npos) {
    if (budget > 0) --budget;
    pos += 15;
  }
  for (std::size_t i = result.size(); i-- > 0;) {
    auto it = carried.find(result[i]->raw());
    if (it == carried.end()) continue;
    std::size_t marks = 0;
    std::string_view raw = it->second->raw();
    for (std::size_t p = 0; (p = raw.find("\"cache_control\"", p)) != std::string_view::npos; p += 15) ++marks;
    if (marks > budget) continue;
    budget -= marks;
    result[i] = it->second;
  }
  return result;
}

std::string read_memfd(int fd) {
  std::string out;
  ::lseek(fd, 0, SEEK_SET);
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

class Compactor {
 public:
  Compaction run(const Loaded& loaded, const std::string& body, bool prompt_too_long_retry,
                 const std::optional<Conversation>& parsed_request);
  std::optional<Conversation> parse(const std::string& body, std::string& error) const;

 private:
  std::mutex mutex_;  // one pipeline child at a time
};

std::optional<Conversation> Compactor::parse(const std::string& body, std::string& error) const {
  ReadOptions options;
  options.source = "request";
  auto conversation = read_conversation(body, options);
  if (!conversation) {
    error = first_line(conversation.error().message);
    return std::nullopt;
  }
  return std::move(*conversation);
}

Compaction Compactor::run(const Loaded& loaded, const std::string& body, bool prompt_too_long,
                          const std::optional<Conversation>& parsed) {
  Compaction c;
  auto t = Clock::now();
  std::string error;
  std::optional<Conversation> request = parsed ? parsed : parse(body, error);
  c.parse_us = us_since(t);
  if (!request) {
    c.result = Compaction::refused;
    c.warning = "input refused, forwarded unchanged: " + error;
    return c;
  }
  c.messages = request->size();
  t = Clock::now();
  const std::vector<MessagePtr>& original = request->messages();
  std::vector<MessagePtr> stripped = without_cache_control(original);
  // Claude Code's system entries (kept by the conversation model beside the messages): hashed
  // and stored with the history, without cache_control as the messages are.
  std::vector<std::string> entries;
  for (const SystemEntry& e : request->frame().system_entries) entries.push_back(without_cache_control(e.raw));
  const std::vector<std::size_t>& slots = request->system_slots();
  std::vector<std::string> hashes = prefix_hashes(stripped, entries, slots);
  std::vector<MessagePtr> input = stripped;
  std::vector<std::size_t> input_slots = slots;
  if (auto hit = loaded.state->longest(hashes)) {
    // The stored history holds the entries of the prefix it covers (those up to its end).
    std::size_t covered_entries = 0;
    while (covered_entries < slots.size() && slots[covered_entries] <= hit->covered) ++covered_entries;
    if (hit->unchanged || hit->system_slots.size() == covered_entries) {
      c.state_hit = true;
      c.covered = hit->covered;
    }
    if (c.state_hit && !hit->unchanged) {
      input = std::move(hit->sent);
      input_slots = std::move(hit->system_slots);
      for (std::size_t k = covered_entries; k < slots.size(); ++k) input_slots.push_back(slots[k] - hit->covered + input.size());
      // On a retry after a refusal the stored history for the whole request is what was sent.
      input.insert(input.end(), stripped.begin() + static_cast<std::ptrdiff_t>(hit->covered), stripped.end());
    }
  }
  c.state_us = us_since(t);
  Conversation in = request->with_messages_at(input, input_slots);
  // Breakpoints outside the messages (the system prompt, tools, the system entries) count first.
  std::string frame_text = std::string(request->frame().prefix) + std::string(request->frame().suffix);
  for (const SystemEntry& e : request->frame().system_entries) frame_text += e.raw;

  int fd = ::memfd_create("compactor-serve", MFD_CLOEXEC);
  if (fd < 0) {
    c.warning = std::string("pipeline failed, forwarded unchanged: cannot create a memfd: ") + std::strerror(errno);
    return c;
  }
  Pipeline& pipeline = *loaded.pipeline;
  const StateStore& state = *loaded.state;
  const std::string key = hashes.empty() ? std::string() : hashes.back();
  auto work = [&](ChildProgress& progress) -> int {
    RunOptions options;
    options.prompt_too_long = prompt_too_long;
    options.input_name = "request";
    options.on_stage_start = [&](const std::string& stage, const std::string& plugin) { progress.stage_started(stage, plugin); };
    options.on_stage_end = [&] { progress.stage_finished(); };
    auto log = make_stderr_logger("serve: ");
    RunReport r = pipeline.run(in, options, *log);
    json::object head;
    head["exit"] = r.exit_code;
    head["status"] = r.status;
    head["error"] = first_line(r.error);
    head["in"] = r.input_size.sizes.in(r.budget.unit);
    head["out"] = r.output_size.sizes.in(r.budget.unit);
    json::array stages;
    for (const auto& s : r.stages)
      stages.push_back(json::array{json::string(s.stage), json::string(to_string(s.status)), s.wall_us});
    head["stages"] = std::move(stages);
    std::string out_body;
    if ((r.exit_code == kExitOk || r.exit_code == kExitNotDone) && r.output) {
      const bool changed = r.output->messages() != stripped;
      if (!key.empty()) state.put(key, r.output->messages(), !changed, r.output->system_slots());
      head["changed"] = changed;
      auto out_messages = restore_breakpoints(r.output->messages(), original, stripped, frame_text);
      out_body = r.output->with_messages_at(std::move(out_messages), r.output->system_slots()).serialize();
    }
    write_all(fd, json::serialize(head) + "\n" + out_body);
    return r.exit_code;
  };
  t = Clock::now();
  ChildRunOutcome outcome;
  {
    std::lock_guard lock(mutex_);
    auto timeout = std::chrono::milliseconds(std::min<std::int64_t>(pipeline.config().stage_timeout_ms, loaded.serve.request_timeout_ms));
    outcome = run_in_child(work, timeout, pipeline.config().archive_dir);
  }
  c.child_us = us_since(t);
  std::string out = read_memfd(fd);
  ::close(fd);
  if (outcome.failed) {
    c.warning = "pipeline failed, forwarded unchanged: " + outcome.error;
    return c;
  }
  std::size_t nl = out.find('\n');
  boost::system::error_code ec;
  json::value head = detail::parse_json(std::string_view(out).substr(0, nl), ec);
  if (ec || !head.is_object()) {
    c.warning = "pipeline failed, forwarded unchanged: no outcome from the pipeline's process";
    return c;
  }
  const json::object& h = head.get_object();
  c.status = std::string(h.at("status").as_string());
  c.size_in = h.at("in").to_number<std::uint64_t>();
  c.size_out = h.at("out").to_number<std::uint64_t>();
  c.stages = h.at("stages").as_array();
  for (const auto& s : c.stages) c.stages_us += s.as_array().at(2).to_number<std::int64_t>();
  int exit = static_cast<int>(h.at("exit").to_number<std::int64_t>());
  if (exit == kExitBadInput) {
    c.result = Compaction::refused;
    c.warning = "input refused, forwarded unchanged: " + std::string(h.at("error").as_string());
    return c;
  }
  if (exit != kExitOk && exit != kExitNotDone) {
    c.warning = "pipeline failed, forwarded unchanged: " + std::string(h.at("error").as_string());
    return c;
  }
  c.body = out.substr(nl + 1);
  const json::value* changed = h.if_contains("changed");
  c.result = changed != nullptr && changed->is_bool() && changed->as_bool() ? Compaction::compacted : Compaction::unchanged;
  if (c.result == Compaction::unchanged) c.body = body;  // untouched: the client's own bytes
  return c;
}

// ---------------------------------------------------------------------------------------------

// The byte spans of a request's top-level "messages" array: where it opens and closes, and each
// element's exact bytes. Nothing when the body is not an object with such an array (the body was
// parsed before, so this only finds spans; a later duplicate key wins, as in the parse).
struct MessageSpans {
  std::size_t open = 0, close = 0;  // the '[' and the ']'
  std::vector<std::string_view> items;
};

std::optional<MessageSpans> message_spans(std::string_view body) {
  std::size_t p = 0;
  auto space = [&] {
    while (p < body.size() && (body[p] == ' ' || body[p] == '\n' || body[p] == '\r' || body[p] == '\t')) ++p;
  };
  auto skip_string = [&] {  // at the opening quote; after it, past the closing one
    for (++p; p < body.size(); ++p) {
      if (body[p] == '\\') ++p;
      else if (body[p] == '"') {
        ++p;
        return true;
      }
    }
    return false;
  };
  auto skip_value = [&] {
    space();
    if (p >= body.size()) return false;
    if (body[p] == '"') return skip_string();
    if (body[p] == '{' || body[p] == '[') {
      int depth = 0;
      while (p < body.size()) {
        char c = body[p];
        if (c == '"') {
          if (!skip_string()) return false;
          continue;
        }
        if (c == '{' || c == '[') ++depth;
        else if ((c == '}' || c == ']') && --depth == 0) {
          ++p;
          return true;
        }
        ++p;
      }
      return false;
    }
    while (p < body.size() && body[p] != ',' && body[p] != '}' && body[p] != ']' && body[p] != ' ' && body[p] != '\n' &&
           body[p] != '\r' && body[p] != '\t')
      ++p;
    return true;
  };
  std::optional<MessageSpans> found;
  space();
  if (p >= body.size() || body[p] != '{') return std::nullopt;
  ++p;
  for (;;) {
    space();
    if (p >= body.size()) return std::nullopt;
    if (body[p] == '}') return found;
    if (body[p] == ',') {
      ++p;
      continue;
    }
    if (body[p] != '"') return std::nullopt;
    std::size_t key = p;
    if (!skip_string()) return std::nullopt;
    bool is_messages = body.substr(key, p - key) == "\"messages\"";
    space();
    if (p >= body.size() || body[p] != ':') return std::nullopt;
    ++p;
    space();
    if (!is_messages || p >= body.size() || body[p] != '[') {
      if (!skip_value()) return std::nullopt;
      continue;
    }
    MessageSpans spans;
    spans.open = p++;
    for (;;) {
      space();
      if (p >= body.size()) return std::nullopt;
      if (body[p] == ']') break;
      if (body[p] == ',') {
        ++p;
        continue;
      }
      std::size_t start = p;
      if (!skip_value()) return std::nullopt;
      spans.items.push_back(body.substr(start, p - start));
    }
    spans.close = p++;
    found = std::move(spans);
  }
}

// The OpenAI body to send for a compacted conversation: the client's body around a new messages
// array, in which each message the pipeline left as it was goes out as the exact bytes of the
// client's own message(s) it was imported from (and the system messages before the first one);
// only what a stage built is exported. Nothing when the mapping is unclear.
std::optional<std::string> openai_body(const Conversation& compacted, const ImportResult& imported, std::string_view body,
                                       const MessageSpans& spans) {
  const std::vector<MessagePtr>& source = imported.conversation->messages();
  const std::vector<std::size_t>& lines = imported.message_lines;
  const std::vector<std::string_view>& original = spans.items;
  if (lines.size() != source.size() || source.empty()) return std::nullopt;
  std::string out(body.substr(0, spans.open + 1));
  bool first = true;
  auto add = [&](std::string_view bytes) {
    if (!first) out += ',';
    out += bytes;
    first = false;
  };
  for (std::size_t k = 0; k < lines[0] && k < original.size(); ++k) add(original[k]);
  std::size_t next = 0;
  for (const MessagePtr& m : compacted.messages()) {
    std::size_t found = source.size();
    for (std::size_t i = next; i < source.size(); ++i)
      if (source[i]->raw() == m->raw()) {
        found = i;
        break;
      }
    if (found < source.size()) {
      std::size_t end = found + 1 < lines.size() ? lines[found + 1] : original.size();
      for (std::size_t k = lines[found]; k < end && k < original.size(); ++k) add(original[k]);
      next = found + 1;
      continue;
    }
    boost::system::error_code ec;
    json::value part = detail::parse_json(export_openai(Conversation::from_messages({m})), ec);
    if (ec || !part.is_array()) return std::nullopt;
    for (const auto& e : part.as_array()) add(json::serialize(e));
  }
  out += body.substr(spans.close);
  return out;
}

class Server {
 public:
  Server(ServeOptions options, std::shared_ptr<Loaded> loaded) : options_(std::move(options)), current_(std::move(loaded)) {
    describe_metrics();
  }

  int listen_and_serve();

 private:
  void describe_metrics();
  std::shared_ptr<const Loaded> current() {
    std::lock_guard lock(config_mutex_);
    return current_;
  }
  void reload(const char* why);
  void connection(int fd);
  void handle(Client& client, http::request<http::string_body>& req);
  void messages(Client& client, http::request<http::string_body>& req, const Loaded& loaded);
  void chat_completions(Client& client, http::request<http::string_body>& req, const Loaded& loaded);
  struct OpenAiOutcome {
    bool ran = false;  // the history was importable and the pipeline ran on it
    Compaction::Result result = Compaction::failed;
    std::string body;     // what to forward
    std::string status;   // x-compactor-status
    std::string warning;  // x-compactor-warning
  };
  OpenAiOutcome compact_openai(const Loaded& loaded, const std::string& body, bool prompt_too_long, const std::string& route);
  void pass_through(Client& client, http::request<http::string_body>& req, const Loaded& loaded, const std::string& base,
                    const std::string& route);
  Headers headers_of(const http::request<http::string_body>& req) const;
  void record_compaction(const Compaction& c, const std::string& route);

  ServeOptions options_;
  std::mutex config_mutex_;
  std::shared_ptr<const Loaded> current_;
  std::int64_t config_mtime_ = 0;
  Compactor compactor_;
  Metrics metrics_;
  std::atomic<int> in_flight_{0};
  std::atomic<bool> draining_{false};
  int listen_fd_ = -1;
};

void Server::describe_metrics() {
  metrics_.describe("compactor_serve_requests_total", "counter", "Requests by route and outcome.");
  metrics_.describe("compactor_serve_size_in_total", "counter", "Size of the conversations received, in the budget's unit.");
  metrics_.describe("compactor_serve_size_out_total", "counter", "Size of the conversations forwarded, in the budget's unit.");
  metrics_.describe("compactor_serve_size_saved_total", "counter", "Received minus forwarded, in the budget's unit.");
  metrics_.describe("compactor_serve_stage_outcomes_total", "counter", "Stage outcomes by stage and status.");
  metrics_.describe("compactor_serve_stage_seconds", "histogram", "Wall time per stage that ran.");
  metrics_.describe("compactor_serve_rejections_total", "counter", "Requests refused by the server's limits.");
  metrics_.describe("compactor_serve_upstream_errors_total", "counter", "Upstream answers that were not 2xx, and failures.");
  metrics_.describe("compactor_serve_retries_total", "counter", "Requests sent again after a context-length refusal.");
  metrics_.describe("compactor_serve_state_total", "counter", "Continuity state lookups: hit or miss.");
  metrics_.describe("compactor_serve_reloads_total", "counter", "Config reloads by result.");
}

Headers Server::headers_of(const http::request<http::string_body>& req) const {
  Headers h;
  for (const auto& f : req) h.emplace_back(std::string(f.name_string()), std::string(f.value()));
  return h;
}

void Server::record_compaction(const Compaction& c, const std::string& route) {
  static const char* names[] = {"compacted", "unchanged", "refused", "failed"};
  metrics_.add("compactor_serve_requests_total", fmt::format("route=\"{}\",outcome=\"{}\"", route, names[c.result]));
  if (c.result == Compaction::compacted || c.result == Compaction::unchanged) {
    std::string unit = "unit=\"" + current()->unit + "\"";
    metrics_.add("compactor_serve_size_in_total", unit, static_cast<double>(c.size_in));
    metrics_.add("compactor_serve_size_out_total", unit, static_cast<double>(c.size_out));
    metrics_.add("compactor_serve_size_saved_total", unit,
                 c.size_in > c.size_out ? static_cast<double>(c.size_in - c.size_out) : 0.0);
  }
  for (const auto& s : c.stages) {
    const auto& a = s.as_array();
    std::string stage = label_value(std::string(a.at(0).as_string())), status = std::string(a.at(1).as_string());
    metrics_.add("compactor_serve_stage_outcomes_total", fmt::format("stage=\"{}\",status=\"{}\"", stage, status));
    if (status != "skipped")
      metrics_.observe("compactor_serve_stage_seconds", fmt::format("stage=\"{}\"", stage),
                       static_cast<double>(a.at(2).to_number<std::int64_t>()) / 1e6);
  }
  if (c.result == Compaction::compacted || c.result == Compaction::unchanged)
    metrics_.add("compactor_serve_state_total", c.state_hit ? "result=\"hit\"" : "result=\"miss\"");
}

void Server::messages(Client& client, http::request<http::string_body>& req, const Loaded& loaded) {
  const std::string& body = req.body();
  Compaction c = compactor_.run(loaded, body, false, std::nullopt);
  record_compaction(c, "messages");
  Headers extra;
  if (c.result == Compaction::refused || c.result == Compaction::failed) {
    spdlog::warn("serve: POST {}: {}", std::string(req.target()), c.warning);
    if (c.result == Compaction::failed && loaded.serve.reject_on_failure) {
      respond(client, 500, anthropic_error("api_error", "compactor serve: " + c.warning), "application/json",
              {{"x-compactor-status", "failed"}});
      return;
    }
    extra.emplace_back("x-compactor-warning", header_safe(c.warning));
  }
  extra.emplace_back("x-compactor-status", c.result == Compaction::compacted   ? "compacted"
                                           : c.result == Compaction::unchanged ? "unchanged"
                                           : c.result == Compaction::refused   ? "refused"
                                                                               : "failed");
  const std::string& out = c.body.empty() ? body : c.body;
  Headers headers = headers_of(req);
  std::string url = loaded.upstream + std::string(req.target());
  auto started = Clock::now();
  Upstream u = forward(client, url, "POST", headers, out, loaded.serve.request_timeout_ms, extra);
  if (context_refusal(u)) {
    // The upstream refused the context: on_prompt_too_long on what was sent, and one retry.
    Compaction r = compactor_.run(loaded, body, true, std::nullopt);
    record_compaction(r, "messages_retry");
    // Sending what was just refused again would only be refused again (and is no retry).
    if ((r.result == Compaction::compacted || r.result == Compaction::unchanged) && r.body != out) {
      metrics_.add("compactor_serve_retries_total", "");
      spdlog::info("serve: POST {}: the upstream refused the context; on_prompt_too_long ran, retrying once",
                   std::string(req.target()));
      Headers retry_extra = {{"x-compactor-status", "retried"}};
      u = forward(client, url, "POST", headers, r.body, loaded.serve.request_timeout_ms, retry_extra);
    }
  }
  if (!u.curl_error.empty() || u.status / 100 != 2)
    metrics_.add("compactor_serve_upstream_errors_total", fmt::format("status=\"{}\"", u.status));
  std::int64_t forward_us = us_since(started);
  finish(client, u);
  spdlog::info("serve: POST {} {} {}: messages={} continued={} {}→{} parse_us={} state_us={} stages_us={} child_us={} forward_us={}",
               std::string(req.target()), u.status, c.status, c.messages, c.covered, c.size_in, c.size_out, c.parse_us,
               c.state_us, c.stages_us, c.child_us, forward_us);
}

// The OpenAI route's compaction of one body: the messages go through the OpenAI importer, the
// pipeline, and (for what a stage built) the exporter.
Server::OpenAiOutcome Server::compact_openai(const Loaded& loaded, const std::string& body, bool prompt_too_long,
                                             const std::string& route) {
  OpenAiOutcome o;
  o.body = body;
  o.status = "refused";  // until the pipeline has run
  boost::system::error_code ec;
  json::value doc = detail::parse_json(body, ec);
  std::optional<MessageSpans> spans;
  if (!ec && doc.is_object() && doc.as_object().contains("messages")) spans = message_spans(body);
  if (!spans) {
    o.warning = "input refused, forwarded unchanged: not an OpenAI chat request with messages";
    return o;
  }
  auto imported = import_openai(json::serialize(doc.as_object().at("messages")), "request");
  if (!imported) {
    o.warning = "input refused, forwarded unchanged: " + first_line(imported.error().message);
    return o;
  }
  if (!imported->conversation || !imported->report.repairs.empty() || imported->report.fields_dropped > 0) {
    // Never repaired silently: what the importer would have to change goes out as it came.
    const auto& r = imported->report;
    o.warning = !imported->conversation ? "input refused, forwarded unchanged: no messages to compact"
                : !r.repairs.empty()
                    ? fmt::format("input refused, forwarded unchanged: the history would need {} (first: {} at message {})",
                                  counted(r.repairs.size(), "repair", "repairs"), r.repairs.front().kind, r.repairs.front().line)
                    : fmt::format("input refused, forwarded unchanged: {} the Anthropic form cannot carry",
                                  counted(r.fields_dropped, "field", "fields"));
    return o;
  }
  // The imported conversation (its system lifted into `system`, which the budget counts).
  Compaction c = compactor_.run(loaded, imported->conversation->serialize(), prompt_too_long, std::nullopt);
  record_compaction(c, route);
  o.ran = true;
  o.result = c.result;
  if (c.result == Compaction::compacted) {
    o.status = "failed";  // unless the compacted messages map back onto the client's
    if (auto compacted = compactor_.parse(c.body, o.warning))
      if (auto rebuilt = openai_body(*compacted, *imported, body, *spans)) {
        o.body = std::move(*rebuilt);
        o.status = "compacted";
      }
    if (o.status == "failed" && o.warning.empty()) o.warning = "pipeline output not mapped back to OpenAI messages, forwarded unchanged";
  } else if (c.result == Compaction::unchanged) {
    o.status = "unchanged";
  } else {
    o.status = c.result == Compaction::refused ? "refused" : "failed";
    o.warning = c.warning;
  }
  return o;
}

void Server::chat_completions(Client& client, http::request<http::string_body>& req, const Loaded& loaded) {
  const std::string& body = req.body();
  std::string base = loaded.openai_upstream.empty() ? loaded.upstream : loaded.openai_upstream;
  std::string url = base + std::string(req.target());
  OpenAiOutcome o = compact_openai(loaded, body, false, "chat_completions");
  if (o.ran && o.result == Compaction::failed && loaded.serve.reject_on_failure) {
    spdlog::warn("serve: POST {}: {}", std::string(req.target()), o.warning);
    respond(client, 500,
            json::serialize(json::object{{"error", json::object{{"message", "compactor serve: " + o.warning}, {"type", "server_error"}}}}),
            "application/json", {{"x-compactor-status", "failed"}});
    return;
  }
  Headers extra;
  if (!o.warning.empty()) {
    spdlog::warn("serve: POST {}: {}", std::string(req.target()), o.warning);
    extra.emplace_back("x-compactor-warning", header_safe(o.warning));
    if (!o.ran) metrics_.add("compactor_serve_requests_total", "route=\"chat_completions\",outcome=\"refused\"");
  }
  extra.emplace_back("x-compactor-status", o.status);
  Headers headers = headers_of(req);
  Upstream u = forward(client, url, "POST", headers, o.body, loaded.serve.request_timeout_ms, extra);
  if (o.ran && context_refusal(u)) {
    // The upstream refused the context (context_length_exceeded): on_prompt_too_long on what was
    // sent, and one retry; a second refusal goes back as the upstream sent it.
    OpenAiOutcome r = compact_openai(loaded, body, true, "chat_completions_retry");
    // Sending what was just refused again would only be refused again (and is no retry).
    if ((r.result == Compaction::compacted || r.result == Compaction::unchanged) && r.body != o.body) {
      metrics_.add("compactor_serve_retries_total", "");
      spdlog::info("serve: POST {}: the upstream refused the context; on_prompt_too_long ran, retrying once",
                   std::string(req.target()));
      u = forward(client, url, "POST", headers, r.body, loaded.serve.request_timeout_ms, {{"x-compactor-status", "retried"}});
    }
  }
  if (!u.curl_error.empty() || u.status / 100 != 2)
    metrics_.add("compactor_serve_upstream_errors_total", fmt::format("status=\"{}\"", u.status));
  finish(client, u);
}

void Server::pass_through(Client& client, http::request<http::string_body>& req, const Loaded& loaded,
                          const std::string& base, const std::string& route) {
  metrics_.add("compactor_serve_requests_total", fmt::format("route=\"{}\",outcome=\"passed\"", route));
  Upstream u = forward(client, base + std::string(req.target()), std::string(req.method_string()), headers_of(req),
                       req.body(), loaded.serve.request_timeout_ms, {});
  if (!u.curl_error.empty() || u.status / 100 != 2)
    metrics_.add("compactor_serve_upstream_errors_total", fmt::format("status=\"{}\"", u.status));
  finish(client, u);
}

void Server::handle(Client& client, http::request<http::string_body>& req) {
  std::string target(req.target());
  std::string path = target.substr(0, target.find('?'));
  if (req.method() == http::verb::get && path == "/healthz") {
    respond(client, draining_ ? 503 : 200, draining_ ? "draining\n" : "ok\n", "text/plain");
    return;
  }
  if (req.method() == http::verb::get && path == "/metrics") {
    respond(client, 200, metrics_.render(), "text/plain; version=0.0.4");
    return;
  }
  auto loaded = current();
  bool is_messages = req.method() == http::verb::post && path == "/v1/messages";
  bool is_chat = req.method() == http::verb::post && path == "/v1/chat/completions";
  int limit = static_cast<int>(loaded->serve.max_concurrency);
  if (in_flight_.fetch_add(1) >= limit) {
    in_flight_.fetch_sub(1);
    metrics_.add("compactor_serve_rejections_total", "reason=\"concurrency\"");
    if (is_chat)
      respond(client, 503, R"({"error":{"message":"compactor serve: too many requests in flight","type":"server_error"}})",
              "application/json", {{"retry-after", "1"}});
    else
      respond(client, 529, anthropic_error("overloaded_error", "compactor serve: too many requests in flight"),
              "application/json", {{"retry-after", "1"}});
    return;
  }
  try {
    if (is_messages) messages(client, req, *loaded);
    else if (is_chat) chat_completions(client, req, *loaded);
    else pass_through(client, req, *loaded, loaded->upstream, path == "/v1/messages/count_tokens" ? "count_tokens" : "other");
  } catch (const std::exception& e) {
    spdlog::error("serve: {} {}: internal error: {}", std::string(req.method_string()), path, e.what());
    client.broken = true;
  }
  in_flight_.fetch_sub(1);
}

void Server::connection(int fd) {
  asio::io_context io;
  tcp::socket socket(io);
  beast::error_code ec;
  socket.assign(tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return;
  }
  timeval idle{60, 0};  // an idle keep-alive connection is closed after a minute
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
  beast::flat_buffer buffer;
  for (;;) {
    auto loaded = current();
    http::request_parser<http::string_body> parser;
    parser.body_limit(static_cast<std::uint64_t>(loaded->serve.max_body_bytes));
    http::read(socket, buffer, parser, ec);
    Client client{socket};
    if (ec == http::error::body_limit) {
      client.keep_alive = false;
      metrics_.add("compactor_serve_rejections_total", "reason=\"body_size\"");
      respond(client, 413,
              anthropic_error("request_too_large", fmt::format("compactor serve: the request body is over serve.max_body_bytes ({})",
                                                               loaded->serve.max_body_bytes)),
              "application/json");
      break;
    }
    if (ec) break;
    auto& req = parser.get();
    client.version = req.version();
    client.keep_alive = req.keep_alive() && !draining_;
    handle(client, req);
    if (client.broken || !client.keep_alive || draining_) break;
  }
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

std::int64_t mtime_of(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return 0;
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

void Server::reload(const char* why) {
  LoadOutcome next = load(options_);
  if (!next.loaded) {
    for (const auto& e : next.errors) spdlog::error("serve: reload ({}) refused: {}", why, e);
    metrics_.add("compactor_serve_reloads_total", "result=\"refused\"");
    return;
  }
  if (next.loaded->serve.listen != current()->serve.listen)
    spdlog::warn("serve: reload ({}): serve.listen changed; it takes effect at the next start", why);
  {
    std::lock_guard lock(config_mutex_);
    current_ = std::move(next.loaded);
  }
  metrics_.add("compactor_serve_reloads_total", "result=\"ok\"");
  // One lifecycle line, like "listening" and "drained": what tests and operators wait for.
  fmt::print(stderr, "compactor serve: reloaded {} ({}): validated and in use\n", options_.config_file, why);
}

int Server::listen_and_serve() {
  const std::string listen = current()->serve.listen;
  std::size_t colon = listen.rfind(':');
  std::string host = listen.substr(0, colon);
  int port = std::atoi(listen.substr(colon + 1).c_str());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (host == "localhost") host = "127.0.0.1";
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    fmt::print(stderr, "compactor serve: listen address \"{}\" is not an IPv4 address and port\n", listen);
    return kExitBadInput;
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 128) != 0) {
    fmt::print(stderr, "compactor serve: cannot listen on {}: {}\n", listen, std::strerror(errno));
    return kExitBadInput;
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  config_mtime_ = mtime_of(options_.config_file);

  // Signals are taken by one thread with sigtimedwait; every other thread (and every pipeline
  // child) has them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  std::thread acceptor([this] {
    for (;;) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (draining_) return;
        if (errno == EMFILE || errno == ENFILE) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          continue;
        }
        return;
      }
      std::thread([this, fd] { connection(fd); }).detach();
    }
  });
  fmt::print("compactor serve: listening on http://{}:{} (upstream {})\n", host, ntohs(addr.sin_port), current()->upstream);
  std::fflush(stdout);

  for (;;) {
    timespec wait{1, 0};
    int sig = ::sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGHUP) {
      reload("SIGHUP");
      config_mtime_ = mtime_of(options_.config_file);
    } else if (sig == SIGTERM || sig == SIGINT) {
      break;
    } else if (std::int64_t m = mtime_of(options_.config_file); m != 0 && m != config_mtime_) {
      config_mtime_ = m;
      reload("the file changed");
    }
  }
  // Graceful drain: no new connections; requests in flight finish (bounded by the request time).
  draining_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor.join();
  ::close(listen_fd_);
  auto deadline = Clock::now() + std::chrono::milliseconds(current()->serve.request_timeout_ms);
  while (in_flight_.load() > 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  int left = in_flight_.load();
  fmt::print(stderr, "compactor serve: drained{}; exiting\n", left > 0 ? fmt::format(" ({} requests cut at the time limit)", left) : "");
  std::fflush(nullptr);
  spdlog::shutdown();
  // Idle keep-alive connections' threads may still block in a read: end without unwinding them.
  ::_exit(left > 0 ? kExitNotDone : kExitOk);
}

}  // namespace

int run_server(const ServeOptions& options) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  LoadOutcome loaded = load(options);
  if (!loaded.loaded) {
    for (const auto& e : loaded.errors) fmt::print(stderr, "{}\n", e);
    return loaded.exit_code;
  }
  Server server(options, loaded.loaded);
  return server.listen_and_serve();
}

}  // namespace compactor::serve
