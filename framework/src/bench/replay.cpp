#include "bench/replay.hpp"

#include "model/active_request.hpp"
#include "archive/archive_store.hpp"
#include "checkers/builtin_checkers.hpp"
#include "compactor/protected_tail.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <set>
#include <unistd.h>

namespace compactor::bench {

namespace json = boost::json;

namespace {

class NoSyncFileSystem final : public FileSystem {
 public:
  int open_exclusive(const std::string& path, int mode) override { return real().open_exclusive(path, mode); }
  ssize_t write(int fd, const void* data, std::size_t size) override { return real().write(fd, data, size); }
  ssize_t read_at(int fd, void* data, std::size_t size, off_t offset) override {
    return real().read_at(fd, data, size, offset);
  }
  int close(int fd) override { return real().close(fd); }
  int rename(const std::string& from, const std::string& to) override { return real().rename(from, to); }
  int mkdir(const std::string& path, int mode) override { return real().mkdir(path, mode); }
  int unlink(const std::string& path) override { return real().unlink(path); }
  int sync_filesystem(const std::string&) override { return 0; }
  bool exists(const std::string& path) override { return real().exists(path); }

 private:
  static FileSystem& real() { return real_file_system(); }
};

// Every string value below `v`, each followed by '\n' and a 0x01 byte so that a probe never
// matches across two strings (a probe is one line or one string; 0x01 occurs in neither).
void append_strings(const json::value& v, std::string& out);

void append_strings(const json::object& o, std::string& out) {
  for (const auto& kv : o) append_strings(kv.value(), out);
}

void append_strings(const json::value& v, std::string& out) {
  switch (v.kind()) {
    case json::kind::string:
      out.append(v.get_string().data(), v.get_string().size());
      out += "\n\x01";
      break;
    case json::kind::array:
      for (const auto& e : v.get_array()) append_strings(e, out);
      break;
    case json::kind::object:
      append_strings(v.get_object(), out);
      break;
    default:
      break;
  }
}

// A blob's strings: it holds one JSON value (a message, a block, a result's content) or JSONL
// (a summarized history, one message a line); anything else is searched as it is.
std::string blob_strings(const std::string& bytes) {
  std::string out;
  boost::system::error_code ec;
  json::value v = detail::parse_json(bytes, ec);
  if (!ec) {
    append_strings(v, out);
    return out;
  }
  std::string_view rest = bytes;
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    ec.clear();
    json::value l = detail::parse_json(line, ec);
    if (ec) out.append(line).append("\n\x01");
    else append_strings(l, out);
  }
  return out;
}

// The message's JSON without cache_control markers, serialized: what the prompt cache compares.
std::string without_cache_control(const Message& m) {
  json::object o = m.json();
  if (auto* content = o.if_contains("content"); content != nullptr && content->is_array())
    for (auto& block : content->get_array())
      if (block.is_object()) block.get_object().erase("cache_control");
  return json::serialize(o);
}

bool same_for_cache(const MessagePtr& a, const MessagePtr& b) {
  if (a == b || a->raw() == b->raw()) return true;
  return without_cache_control(*a) == without_cache_control(*b);
}

bool is_summary_stage(const std::string& stage) {
  return stage == "summarize" || stage == "reactive_compact" || stage == "compact_request";
}

std::string first_line(std::string_view text) {
  std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "";
  text.remove_prefix(start);
  std::string_view line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) line.remove_suffix(1);
  return std::string(line);
}

// The text of a tool_result's content: a string, or its text blocks joined.
std::string result_text(const Block& b) {
  const json::value* content = b.content();
  if (content == nullptr) return "";
  if (content->is_string()) return std::string(content->get_string());
  std::string out;
  if (content->is_array())
    for (const auto& e : content->get_array())
      if (e.is_object())
        if (const auto* t = e.get_object().if_contains("text"); t != nullptr && t->is_string()) {
          if (!out.empty()) out += "\n";
          out += t->get_string();
        }
  return out;
}

}  // namespace

std::uint64_t to_nusd(double usd) { return usd <= 0 ? 0 : static_cast<std::uint64_t>(std::llround(usd * 1e9)); }

FileSystem& scratch_file_system() {
  static NoSyncFileSystem fs;
  return fs;
}

std::size_t shared_prefix(const Conversation& previous, const Conversation& request) {
  std::size_t n = std::min(previous.size(), request.size()), k = 0;
  while (k < n && same_for_cache(previous.messages()[k], request.messages()[k])) ++k;
  return k;
}

namespace {

std::vector<std::string> probes_of(const Conversation& session, std::size_t end, bool facts_only) {
  std::set<std::string> probes;
  // "[compactor …" is Compactor's own text (an importer's placeholder for a result the log lacks),
  // not something of the session's to retain.
  auto add = [&](std::string text) {
    if (text.find_first_not_of(" \t\r\n") != std::string::npos && !text.starts_with("[compactor ")) probes.insert(std::move(text));
  };
  for (std::size_t i = 0; i < std::min(end, session.size()); ++i) {
    const Message& m = session[i];
    for (const Block& b : m.blocks()) {
      if (b.kind() == BlockKind::text && m.role() == Role::user && !facts_only) add(std::string(b.text()));
      if (b.kind() == BlockKind::tool_result && b.is_error()) add(first_line(result_text(b)));
      if (b.kind() == BlockKind::tool_use) {
        if (!facts_only) add(std::string(b.name()));
        if (const json::value* input = b.input(); input != nullptr && input->is_object())
          for (const char* key : {"file_path", "path", "notebook_path"})
            if (const auto* p = input->get_object().if_contains(key); p != nullptr && p->is_string())
              add(std::string(p->get_string()));
      }
    }
  }
  return {probes.begin(), probes.end()};
}

}  // namespace

std::vector<std::string> retention_probes(const Conversation& session, std::size_t end) { return probes_of(session, end, false); }
std::vector<std::string> fact_probes(const Conversation& session, std::size_t end) { return probes_of(session, end, true); }

Retention measure_retention(const Conversation& request, const std::vector<std::string>& probes,
                            const std::vector<std::string>& facts, const std::string& archive_dir,
                            std::map<std::string, std::string>& blobs) {
  Retention r;
  std::string visible;
  for (const auto& m : request.messages()) append_strings(m->json(), visible);
  // Receipts named by the request, then by every blob restored (a summary's snapshot names the
  // receipts of the results micro had archived before it).
  std::string reachable;
  std::set<std::string> seen;
  std::vector<std::string> queue = find_receipts(visible);
  while (!queue.empty()) {
    std::string receipt = std::move(queue.back());
    queue.pop_back();
    if (!seen.insert(receipt).second) continue;
    auto cached = blobs.find(receipt);
    if (cached == blobs.end()) {
      auto bytes = restore_blob(archive_dir, receipt);
      cached = blobs.emplace(receipt, bytes ? blob_strings(*bytes) : std::string()).first;
    }
    reachable += cached->second;
    for (auto& next : find_receipts(cached->second)) queue.push_back(std::move(next));
  }
  r.facts = facts.size();
  for (const auto& f : facts) r.facts_visible += visible.find(f) != std::string::npos;
  r.probes = probes.size();
  for (const auto& p : probes) {
    if (visible.find(p) != std::string::npos) {
      ++r.visible;
      ++r.recoverable;
    } else if (reachable.find(p) != std::string::npos) {
      ++r.recoverable;
    } else {
      r.lost.push_back(p);
    }
  }
  return r;
}

SessionReplay replay_session(const Conversation& session, Pipeline& pipeline, const ReplaySetup& setup,
                             StageLogger& log) {
  SessionReplay out;
  out.session = setup.session;
  out.model = setup.model;
  out.meter = setup.meter_name;
  const Conversation original = session.with_meter(setup.meter);
  std::vector<std::size_t> answers;  // a model call happens before each of these
  for (std::size_t i = 1; i < original.size(); ++i)
    if (original[i].role() == Role::assistant) answers.push_back(i);
  const std::size_t last = answers.empty() ? 0 : answers.size() - 1, median = last / 2;
  const std::uint64_t min_cacheable = setup.price != nullptr ? setup.price->min_cacheable_tokens : 1024;
  std::map<std::string, std::string> blobs;

  std::vector<MessagePtr> held;  // the history the agent holds: what it sent last, and what came since
  std::vector<std::size_t> held_slots;  // where its system entries sit (the session's first ones)
  const std::vector<SystemEntry>& entries = original.frame().system_entries;
  std::optional<Conversation> previous;
  std::size_t next = 0;
  for (std::size_t c = 0; c < answers.size(); ++c) {
    // The entries that came with the new messages (up to just before the answer) join the held
    // history after them, as the agent sent them.
    for (std::size_t k = held_slots.size(); k < entries.size() && entries[k].slot <= answers[c]; ++k)
      held_slots.push_back(held.size() + (entries[k].slot - next));
    for (; next < answers[c]; ++next) held.push_back(original.messages()[next]);
    const Conversation input = original.with_first_system_entries(held_slots.size(), held, held_slots);
    CallRecord call;
    Conversation sent = input;
    auto run = [&](bool prompt_too_long) {
      RunOptions options;
      options.prompt_too_long = prompt_too_long;
      options.input_name = out.session + " call " + std::to_string(c + 1);
      options.archive_dir = setup.archive_dir;
      options.file_system = &scratch_file_system();
      auto started = std::chrono::steady_clock::now();
      RunReport r = pipeline.run(sent, options, log);
      call.pipeline_us +=
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
      for (const auto& s : r.stages) {
        if (s.status == StageStatus::skipped) continue;
        if (!call.stages.empty()) call.stages += ' ';
        call.stages += s.stage + ":" + std::string(to_string(s.status));
        if (s.status == StageStatus::committed && is_summary_stage(s.stage)) ++out.summaries;
        if (s.status == StageStatus::rejected) {
          ++out.rejections;
          out.errors.push_back("call " + std::to_string(c + 1) + ": " + s.stage + " rejected: " +
                               (s.violations.empty() ? std::string() : first_line(s.violations.front())));
        }
      }
      for (const auto& sc : r.summarizer_calls) {
        ++out.summarizer_calls;
        out.summarizer_input += sc.call.input_tokens;
        out.summarizer_output += sc.call.output_tokens;
        std::optional<double> cost = sc.cost_usd;
        if (const ModelPrice* p = !cost && setup.prices != nullptr ? setup.prices->find(sc.call.model) : nullptr)
          cost = p->cost(sc.call.input_tokens, 0, 0, sc.call.output_tokens);
        out.summarizer_cost_nusd += to_nusd(cost.value_or(0.0));
      }
      if (r.exit_code == 2 || r.exit_code == 3 || !r.output) {
        ++out.failures;
        out.errors.push_back("call " + std::to_string(c + 1) + ": " + r.status + ": " + first_line(r.error));
        return std::string("failed");
      }
      if (r.first_changed_message) call.compacted = true;
      sent = *r.output;
      if (sent.frame().meter != setup.meter) sent = sent.with_meter(setup.meter);
      return r.status;
    };
    std::string status = run(false);
    if (sent.size_in(SizeUnit::tokens) > setup.window) {
      // The API refuses the request; the agent compacts reactively, once, and sends again.
      call.refused = true;
      ++out.refusals;
      status = run(true);
      if (sent.size_in(SizeUnit::tokens) > setup.window) ++out.over_window;
    }
    if (status == "over_budget") {
      const PipelineConfig& config = pipeline.config();
      const ProtectedTail tail = compute_protected_tail(sent, config.recent_exchanges);
      std::uint64_t alone = sent.frame().fixed.in(config.budget.unit);
      for (std::size_t i = tail.begin; i < sent.size(); ++i) alone += sent.size_of(sent[i], config.budget.unit);
      // … and the request, which a summary quotes verbatim, as a message of its own.
      json::array quoted;
      for (const std::string& text : find_active_request(sent).texts) quoted.push_back(json::object{{"type", "text"}, {"text", text}});
      if (auto request = Message::from_json(json::object{{"role", "user"}, {"content", std::move(quoted)}}))
        alone += sent.size_of(**request, config.budget.unit);
      ++(alone > config.budget.limit ? out.over_budget_tail : out.over_budget);
    }
    if (call.compacted) ++out.compactions;

    call.messages = sent.size();
    call.sent = sent.size_in(SizeUnit::tokens);
    std::uint64_t prefix_tokens = 0;
    if (previous) {
      call.cached_messages = shared_prefix(*previous, sent);
      prefix_tokens = sent.frame().fixed.tokens;
      for (std::size_t i = 0; i < call.cached_messages; ++i) prefix_tokens += sent.size_of(sent[i], SizeUnit::tokens);
    }
    // The agent marks the end of each request for caching: the prefix is read when it is long
    // enough to have been cached, the rest written when the request is long enough to be.
    call.cache_read = prefix_tokens >= min_cacheable ? prefix_tokens : 0;
    call.cache_write = call.sent >= min_cacheable ? call.sent - call.cache_read : 0;
    auto recorded = setup.recorded_output.find(answers[c]);
    call.output = recorded != setup.recorded_output.end() ? recorded->second : original.size_of(original[answers[c]], SizeUnit::tokens);
    const std::uint64_t uncached = call.sent - call.cache_read - call.cache_write;
    out.sent += call.sent;
    out.cache_read += call.cache_read;
    out.cache_write += call.cache_write;
    out.uncached += uncached;
    out.output += call.output;

    if (c == median || c == last) {
      auto probes = retention_probes(original, answers[c]);
      Retention r = measure_retention(sent, probes, fact_probes(original, answers[c]), setup.archive_dir, blobs);
      r.call = c + 1;
      if (c == median) out.median = r;
      if (c == last) out.last = std::move(r);
    }
    out.calls.push_back(std::move(call));
    if (setup.on_call) setup.on_call(c, sent);
    held = sent.messages();
    held_slots = sent.system_slots();
    previous = std::move(sent);
  }
  // Prices are linear in tokens: the session's cost is the cost of its totals.
  if (setup.price != nullptr) out.cost_nusd = to_nusd(setup.price->cost(out.uncached, out.cache_write, out.cache_read, out.output));
  // Each call's request is checked as the next call's input; the last one is checked here.
  if (previous) {
    auto violations = run_checkers(make_input_checkers(), CheckInput{*previous, *previous, compute_protected_tail(*previous, 0), {}});
    if (!violations.empty()) {
      ++out.failures;
      out.errors.push_back("call " + std::to_string(answers.size()) + ": the request sent: " + first_line(violations.front().to_string()));
    }
  }
  return out;
}

}  // namespace compactor::bench
