#include "serve/background_summary.hpp"

#include "archive/file_system.hpp"
#include "compactor/archive.hpp"
#include "compactor/summary_format.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

namespace compactor::serve {
namespace {

namespace json = boost::json;

std::string hex_of(std::string_view bytes) { return receipt_of(bytes).substr(7); }

// A summary's key: what the model is asked, so the same messages asked the same way are one summary.
std::string key_of(const SummaryRecord& r) {
  std::string named = fmt::format("compactor background summary\nmax_chars {}\n", r.max_chars);
  for (const std::string& q : r.requests) named += fmt::format("request {}\n{}\n", q.size(), q);
  return hex_of(named + r.messages);
}

std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

// The checks compact_with_summary makes of a summary, so the one that replaces a stand-in passes them.
std::optional<std::string> refusal_of(std::string& text, const Summary& s, std::size_t max_chars) {
  while (!text.empty() && std::string_view(" \n\t\r").find(text.back()) != std::string_view::npos) text.pop_back();
  if (text.find_first_not_of(" \n\t\r") == std::string::npos) return "the summarizer returned an empty summary";
  if (s.truncated) return "the summarizer's summary was truncated";
  if (count_code_points(text) > max_chars) return fmt::format("the summary is {} chars, over max_chars {}", count_code_points(text), max_chars);
  if (text.find("summary>>>") != std::string::npos) return "the summary contains the untrusted block's closing delimiter";
  return std::nullopt;
}

// The messages of a record, as a conversation of their own.
Expected<Conversation> conversation_of(const SummaryRecord& r) {
  std::vector<MessagePtr> messages;
  std::string_view rest = r.messages;
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (line.empty()) continue;
    boost::system::error_code ec;
    json::value v = detail::parse_json(line, ec);
    if (ec || !v.is_object()) return Error{"background summary record: a message is not a JSON object"};
    auto m = Message::from_json(std::move(v.get_object()));
    if (!m) return Error{"background summary record: " + m.error().message};
    messages.push_back(std::move(m).value());
  }
  return Conversation::from_messages(std::move(messages));
}

Expected<std::optional<SummaryRecord>> read_record(store::Store& store, const std::string& key) {
  auto stored = store.longest_state({record_key(key)}, 1);
  if (!stored) return stored.error();
  if (!*stored) return std::optional<SummaryRecord>();
  return SummaryRecord::from_json((*stored)->bytes);
}

}  // namespace

std::string record_key(const std::string& key) { return hex_of("compactor background summary record\n" + key); }

std::string SummaryRecord::to_json() const {
  json::array quoted;
  for (const auto& q : requests) quoted.emplace_back(q);
  json::object o{{"messages", messages}, {"requests", std::move(quoted)}, {"max_chars", max_chars}, {"attempts", attempts}};
  if (summary) o["summary"] = *summary;
  if (!failure.empty()) o["failure"] = failure;
  return json::serialize(o);
}

std::optional<SummaryRecord> SummaryRecord::from_json(std::string_view text) {
  boost::system::error_code ec;
  json::value v = detail::parse_json(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const json::object& o = v.get_object();
  const json::value *m = o.if_contains("messages"), *q = o.if_contains("requests"), *c = o.if_contains("max_chars"),
                    *a = o.if_contains("attempts"), *s = o.if_contains("summary"), *f = o.if_contains("failure");
  if (m == nullptr || !m->is_string() || q == nullptr || !q->is_array() || c == nullptr || !c->is_int64() || a == nullptr || !a->is_int64())
    return std::nullopt;
  SummaryRecord r;
  r.messages = std::string(m->get_string());
  for (const auto& e : q->get_array())
    if (e.is_string()) r.requests.emplace_back(e.get_string());
  r.max_chars = static_cast<std::size_t>(c->get_int64());
  r.attempts = a->get_int64();
  if (s != nullptr && s->is_string()) r.summary = std::string(s->get_string());
  if (f != nullptr && f->is_string()) r.failure = std::string(f->get_string());
  return r;
}

std::optional<SummaryRecord> StoredSummaries::read(const std::string& key) {
  auto r = read_record(store_, key);
  return r ? *r : std::nullopt;  // a store that fails: as if nothing were recorded (counted there)
}

bool StoredSummaries::start(const std::string& key, SummaryRecord& record) {
  if (record.attempts >= config_.background_attempts) return false;
  auto leased = store_.take_lease(key, config_.background_timeout_s * 1000 + 1000);
  if (!leased || !*leased) return false;
  ++record.attempts;
  if (!store_.put_state(record_key(key), record.to_json())) {  // a bound or a failure: not started
    store_.release_lease(key);
    return false;
  }
  started_.push_back(key);
  return true;
}

BackgroundSummaries::Found StoredSummaries::find_or_start(const SummaryRequest& request) {
  SummaryRecord record;
  for (std::string_view piece : request.conversation.jsonl_pieces(request.begin, request.end)) record.messages += piece;
  record.requests = request.requests;
  record.max_chars = request.max_chars;
  Found found{key_of(record), std::nullopt};
  if (auto stored = read(found.key)) {
    if (stored->summary) {
      found.summary = std::move(stored->summary);
      return found;
    }
    record.attempts = stored->attempts;
  }
  start(found.key, record);
  return found;
}

Conversation StoredSummaries::with_ready_summaries(const Conversation& input, StageLogger& log) {
  const std::size_t n = leading_summaries(input);
  std::vector<MessagePtr> messages;
  for (std::size_t i = 0; i < n; ++i) {
    const SummaryState state = read_summary_state(input, i);
    if (state.stands_in_for.empty()) continue;
    std::optional<SummaryRecord> record = read(state.stands_in_for);
    if (!record) continue;
    if (!record->summary) {
      start(state.stands_in_for, *record);
      continue;
    }
    boost::system::error_code ec;
    json::value v = detail::parse_json(input[i].raw(), ec);
    json::array* content = !ec && v.is_object() && v.get_object()["content"].is_array() ? &v.get_object()["content"].get_array() : nullptr;
    if (content == nullptr || content->empty() || !content->front().is_object()) continue;
    json::object& first = content->front().get_object();
    first["text"] = with_final_summary(json::value_to<std::string>(first["text"]), *record->summary);
    auto replaced = Message::from_json(std::move(v.get_object()));
    if (!replaced) continue;
    // Archive before removal: the stand-in's own text can be restored.
    auto archive = store_.open_run(real_file_system());
    auto receipt = archive->put(HashedBlob(std::string(input[i].raw()) + "\n"));
    if (!receipt || !archive->commit()) {
      log.warn(fmt::format("the model's summary {} is ready but its stand-in could not be archived; kept the stand-in", state.stands_in_for));
      continue;
    }
    if (messages.empty()) messages = input.messages();
    messages[i] = std::move(replaced).value();
    ++replaced_;
    log.info(fmt::format("the model's summary {} replaced its stand-in at message {} (archived as {})", state.stands_in_for, i, *receipt));
  }
  return messages.empty() ? input : input.with_messages(std::move(messages));
}

JobOutcome run_summary_job(Pipeline& pipeline, store::Store& store, const std::string& key, StageLogger& log) {
  JobOutcome o;
  auto found = read_record(store, key);
  std::optional<SummaryRecord> record = found ? *found : std::nullopt;
  if (!record) {
    o.warning = "background summary " + key + ": " + (found ? std::string("no record of it in the store") : found.error().message);
    store.release_lease(key);
    return o;
  }
  if (record->summary) {
    o.result = JobOutcome::compacted;
    return o;
  }
  auto conversation = conversation_of(*record);
  Expected<Summary> summary = conversation ? pipeline.summarizer()->summarize(SummaryRequest{*conversation, conversation->size(), record->requests, record->max_chars, 0})
                                           : Expected<Summary>(conversation.error());
  std::string why;
  if (!summary) why = first_line(summary.error().message);
  else if (auto refused = refusal_of(summary->text, *summary, record->max_chars)) why = *refused;
  if (why.empty()) record->summary = summary->text, record->failure.clear();
  else record->failure = why;
  o.result = why.empty() ? JobOutcome::compacted : JobOutcome::failed;
  if (!why.empty()) o.warning = "background summary " + key + " failed (attempt " + std::to_string(record->attempts) + "): " + why;
  if (auto put = store.put_state(record_key(key), record->to_json()); !put) {
    o.result = JobOutcome::failed;
    o.warning = "background summary " + key + " could not be stored: " + first_line(put.error().message);
  }
  store.release_lease(key);
  log.info(o.result == JobOutcome::compacted ? "background summary " + key + " written" : o.warning);
  return o;
}

}  // namespace compactor::serve
