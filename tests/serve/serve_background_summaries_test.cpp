// Model summaries never on a call's path (summarizer.mode: background): the call that needs a
// summary is forwarded with the extractive one as its stand-in while a stand-in model server holds
// the model's answer until the test releases it; the model's summary takes the stand-in's place on
// the first call after it is written; a failed summary never refuses a call and is tried up to
// summarizer.background_attempts; a summary pending when serve is killed (-9) is started again by
// a later call once its lease has ended; two replicas on one Redis start it once (the lease), and
// either one's next call uses it.
#include "support/loopback_http_server.hpp"
#include "support/redis_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

namespace compactor {
namespace {

using test::metric;
namespace fs = std::filesystem;
using test::call;
using test::LoopbackHttpServer;
using test::Reply;
using test::ScriptedResponse;
using test::ServeProcess;

constexpr const char* kSession = "cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json";
constexpr const char* kModelSummary = "MODEL-WRITTEN SUMMARY: the agent read the parser and fixed the off-by-one.";
constexpr const char* kStandIn = "; compactor-stand-in: ";
// Call A (messages [0, 21), 117k chars) crosses the limit; call B ([0, 27)) continues it under it.
constexpr std::size_t kCallA = 21, kCallB = 27;

// The model stand-in's hold: its answer waits until the test releases it (bounded, so a failing
// test ends).
class Gate {
 public:
  void release() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::seconds(60), [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

ScriptedResponse held_summary(Gate& gate) {
  ScriptedResponse r{200, {}, test::anthropic_reply(kModelSummary)};
  r.before_answer = [&gate] { gate.wait(); };
  return r;
}

std::vector<ScriptedResponse> answers(std::size_t n) { return std::vector<ScriptedResponse>(n, ScriptedResponse{200, {}, test::anthropic_reply("ok")}); }

std::string request_body(const Conversation& c, std::size_t count) {
  std::string body = R"({"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are a coding agent.","messages":[)";
  for (std::size_t i = 0; i < count; ++i) body += (i ? "," : "") + std::string(c[i].raw());
  return body + "]}";
}

std::string config(const fs::path& dir, const std::string& model_url, const std::string& summarizer_extra,
                   const std::string& store = "", const std::string& serve = "") {
  fs::create_directories(dir);
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 100000, target: 60000}\n"
                                << "archive: {dir: " << (dir / "archive").string() << "}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n"
                                << "summarizer:\n  kind: anthropic\n  model: claude-sonnet-4-5\n  base_url: " << model_url
                                << "\n  api_key_env: COMPACTOR_TEST_KEY\n  retries: 0\n" << summarizer_extra
                                << "pipeline:\n  - stage: summarize\n    when: over_budget\n    params: {max_chars: 2000}\n"
                                << store << "serve: {" << serve << "}\n";
  return "c.yaml";
}

const std::vector<std::pair<std::string, std::string>> kKey{{"COMPACTOR_TEST_KEY", "sk-test-key"}};

// Waits (up to 20 s) for `done`: what happens after an answer is seen by its state, not by a sleep.
bool wait_until(const std::function<bool()>& done) {
  for (int i = 0; i < 2000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string summaries_total(const std::string& result) {
  return "compactor_serve_background_summaries_total{result=\"" + result + "\"}";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The processes under `root` (its zygote, their workers), from /proc.
std::vector<pid_t> descendants_of(pid_t root) {
  std::map<pid_t, pid_t> parent;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    parent[std::stoi(name)] = ppid;
  }
  std::vector<pid_t> out{root};
  for (std::size_t i = 0; i < out.size(); ++i)
    for (const auto& [pid, ppid] : parent)
      if (ppid == out[i]) out.push_back(pid);
  out.erase(out.begin());
  return out;
}

// The background summary records serve keeps in the folder store, by their attempts.
std::vector<int> record_attempts(const fs::path& archive) {
  std::vector<int> out;
  static const std::regex attempts("\"attempts\":([0-9]+)");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(archive / "serve-state", ec)) {
    std::smatch m;
    const std::string text = test::read_file(e.path().string());
    if (has(text, "\"max_chars\"") && std::regex_search(text, m, attempts)) out.push_back(std::stoi(m[1]));
  }
  return out;
}

TEST(ServeBackgroundSummaries, TheCrossingCallGoesOnAndTheNextCallAfterTheSummaryCarriesIt) {
  fs::path dir = test::scratch_folder_until_exit("bg-summary-path");
  const Conversation session = test::load_or_die(test::data_path(kSession));
  Gate gate;
  LoopbackHttpServer model({held_summary(gate)});
  LoopbackHttpServer upstream(answers(3));
  ServeProcess serve(dir, config(dir, model.base_url(), ""), upstream.base_url(), "serve", kKey);

  // The call that crosses the limit reaches the upstream with the extractive summary standing in,
  // while the model's answer is held.
  Reply a = call(serve.port(), "POST", "/v1/messages", request_body(session, kCallA));
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(upstream.requests().size(), 1u);
  const std::string first = upstream.requests()[0].body;
  EXPECT_TRUE(has(first, "[compactor summary]")) << "call A was not summarized: this test proves nothing";
  EXPECT_TRUE(has(first, kStandIn));
  EXPECT_FALSE(has(first, kModelSummary));
  ASSERT_TRUE(wait_until([&] { return model.requests().size() == 1; })) << "the background summary was not started";
  EXPECT_EQ(metric(serve.port(), summaries_total("ok")), 0);

  // Released: written in the background, then in the history of the next call.
  gate.release();
  ASSERT_TRUE(wait_until([&] { return metric(serve.port(), summaries_total("ok")) == 1; })) << serve.stderr_text();
  Reply b = call(serve.port(), "POST", "/v1/messages", request_body(session, kCallB));
  ASSERT_EQ(b.status, 200) << b.body;
  ASSERT_EQ(upstream.requests().size(), 2u);
  const std::string second = upstream.requests()[1].body;
  EXPECT_TRUE(has(second, kModelSummary)) << second.substr(0, 4000);
  EXPECT_FALSE(has(second, kStandIn));
  EXPECT_EQ(model.requests().size(), 1u);
  EXPECT_TRUE(has(serve.stderr_text(), "replaced its stand-in")) << serve.stderr_text();
}

TEST(ServeBackgroundSummaries, AFailedSummaryNeverRefusesAndIsTriedUpToItsCap) {
  fs::path dir = test::scratch_folder_until_exit("bg-summary-failed");
  const Conversation session = test::load_or_die(test::data_path(kSession));
  const ScriptedResponse broken{500, {}, R"({"type":"error","error":{"type":"api_error","message":"overloaded"}})"};
  LoopbackHttpServer model({broken, broken, broken});
  LoopbackHttpServer upstream(answers(3));
  ServeProcess serve(dir, config(dir, model.base_url(), "  background_attempts: 2\n", "", "on_failure: reject"), upstream.base_url(),
                     "serve", kKey);

  for (int attempt = 1; attempt <= 3; ++attempt) {
    Reply r = call(serve.port(), "POST", "/v1/messages", request_body(session, kCallA));
    ASSERT_EQ(r.status, 200) << "call " << attempt << ": " << r.body;
    EXPECT_TRUE(has(upstream.requests().back().body, kStandIn)) << "call " << attempt;
    // The worker counts an attempt before the call is answered: two at most, whatever follows.
    EXPECT_EQ(record_attempts(dir / "archive"), std::vector<int>{std::min(attempt, 2)}) << "call " << attempt;
    if (attempt <= 2) {
      ASSERT_TRUE(wait_until([&] { return metric(serve.port(), summaries_total("failed")) == attempt; })) << serve.stderr_text();
    }
  }
  EXPECT_EQ(model.requests().size(), 2u);
  EXPECT_TRUE(has(serve.stderr_text(), "background summary")) << serve.stderr_text();
}

TEST(ServeBackgroundSummaries, APendingSummaryLostToKill9IsStartedAgainByALaterCall) {
  fs::path dir = test::scratch_folder_until_exit("bg-summary-kill");
  const Conversation session = test::load_or_die(test::data_path(kSession));
  Gate gate;
  LoopbackHttpServer model({held_summary(gate), ScriptedResponse{200, {}, test::anthropic_reply(kModelSummary)}});
  LoopbackHttpServer upstream(answers(200));
  const std::string file = config(dir, model.base_url(), "  background_timeout_s: 2\n");
  {
    ServeProcess first(dir, file, upstream.base_url(), "first", kKey);
    Reply a = call(first.port(), "POST", "/v1/messages", request_body(session, kCallA));
    ASSERT_EQ(a.status, 200) << a.body;
    ASSERT_TRUE(has(upstream.requests().back().body, kStandIn));
    ASSERT_TRUE(wait_until([&] { return model.requests().size() == 1; }));
    const std::vector<pid_t> under = descendants_of(first.pid());
    ASSERT_FALSE(under.empty());
    first.kill_hard();
    // Its zygote and the summary's worker end with it (their parent-death signal): waited for,
    // so the held answer cannot reach a worker still alive.
    ASSERT_TRUE(wait_until([&] {
      return std::none_of(under.begin(), under.end(), [](pid_t p) { return ::kill(p, 0) == 0; });
    }));
  }
  gate.release();  // the held answer goes to a worker that is gone

  // A new serve: the stand-in is in the stored history, its summary neither written nor leased
  // once the lease's time (2 s + 1) has passed; some call then starts it again.
  ServeProcess second(dir, file, upstream.base_url(), "second", kKey);
  for (int i = 0; i < 150 && model.requests().size() < 2; ++i) {
    Reply r = call(second.port(), "POST", "/v1/messages", request_body(session, kCallA));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(has(upstream.requests().back().body, kStandIn));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a poll's pace, not a wait for time to pass
  }
  ASSERT_TRUE(wait_until([&] { return model.requests().size() == 2; })) << second.stderr_text();
  ASSERT_TRUE(wait_until([&] { return metric(second.port(), summaries_total("ok")) == 1; })) << second.stderr_text();
  Reply b = call(second.port(), "POST", "/v1/messages", request_body(session, kCallB));
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_TRUE(has(upstream.requests().back().body, kModelSummary));
  EXPECT_FALSE(has(upstream.requests().back().body, kStandIn));
}

TEST(ServeBackgroundSummaries, TwoReplicasOnOneRedisStartItOnceAndEitherUsesIt) {
  test::RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  fs::path dir = test::scratch_folder_until_exit("bg-summary-redis");
  const Conversation session = test::load_or_die(test::data_path(kSession));
  Gate gate;
  LoopbackHttpServer model({held_summary(gate), ScriptedResponse{200, {}, test::anthropic_reply("A SECOND SUMMARY")}});
  LoopbackHttpServer upstream(answers(4));
  const std::string store = redis.store_yaml();
  ServeProcess one(dir / "one", config(dir / "one", model.base_url(), "", store), upstream.base_url(), "one", kKey);
  ServeProcess two(dir / "two", config(dir / "two", model.base_url(), "", store), upstream.base_url(), "two", kKey);

  Reply a = call(one.port(), "POST", "/v1/messages", request_body(session, kCallA));
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_TRUE(has(upstream.requests().back().body, kStandIn));
  ASSERT_TRUE(wait_until([&] { return model.requests().size() == 1; }));
  // The same call at the other replica: the same summary, under the first one's lease.
  Reply again = call(two.port(), "POST", "/v1/messages", request_body(session, kCallA));
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_TRUE(has(upstream.requests().back().body, kStandIn));

  gate.release();
  ASSERT_TRUE(wait_until([&] { return metric(one.port(), summaries_total("ok")) == 1; })) << one.stderr_text();
  Reply b = call(two.port(), "POST", "/v1/messages", request_body(session, kCallB));
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_TRUE(has(upstream.requests().back().body, kModelSummary));
  EXPECT_EQ(model.requests().size(), 1u);
  EXPECT_EQ(metric(two.port(), summaries_total("ok")), 0);
}

}  // namespace
}  // namespace compactor
