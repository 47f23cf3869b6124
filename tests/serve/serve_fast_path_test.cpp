// serve forwards a call no stage can act on without a pipeline worker (serve/fast_path.hpp): which
// calls take that path and why the others do not, that a state either path stored is continued by
// the other, and that both paths forward the same bytes for the same calls of real sessions.
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include "compactor/conversation.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using test::call;
using test::LoopbackHttpServer;
using test::Reply;
using test::ScriptedResponse;
using test::ServeProcess;

const std::string kPlugins =
    std::string("plugin_dirs: [\"") + COMPACTOR_PLUGIN_DIR + "\", \"" + COMPACTOR_TEST_PLUGIN_DIR + "\"]\n";

// A stage that sees every call and changes nothing (`misbehave` archives a blob and returns its
// input): with it first, every call runs a worker, whose stages all skip as the fast path's would.
const std::string kEveryCall = "  - stage: misbehave\n    params: {mode: none}\n";

std::string write_config(const fs::path& dir, const std::string& name, const std::string& budget, const std::string& pipeline) {
  std::ofstream(dir / name) << "version: 1\nbudget: " << budget << "\narchive: {dir: archive}\n" << kPlugins << "pipeline:\n" << pipeline;
  return name;
}

std::string text_of(std::size_t chars, char fill) { return std::string(chars, fill); }

// One assistant turn calling `tool` and the user message with its result.
std::string turn(const std::string& id, const std::string& tool, const std::string& input, const std::string& result) {
  return R"({"role":"assistant","content":[{"type":"tool_use","id":")" + id + R"(","name":")" + tool + R"(","input":)" + input +
         R"(}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":")" + id + R"(","content":")" + result + R"("}]})";
}

std::string body_of(const std::vector<std::string>& turns) {
  std::string body = R"({"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"Look at the files."})";
  for (const auto& t : turns) body += "," + t;
  return body + "]}";
}

std::size_t metric(unsigned short port, const std::string& series) {
  const std::string text = call(port, "GET", "/metrics").body;
  const std::size_t at = text.find(series + " ");
  return at == std::string::npos ? 0 : std::stoul(text.substr(at + series.size() + 1));
}

std::size_t calls_on(unsigned short port, const std::string& path) {
  return metric(port, "compactor_serve_path_seconds_count{path=\"" + path + "\"}");
}

// Serve's log lines for finished calls, once there are `count` (each is written as its answer
// ends, which may be after the client has read it).
std::vector<std::string> done_lines(const ServeProcess& serve, std::size_t count) {
  std::vector<std::string> lines;
  for (int i = 0; i < 2000 && lines.size() < count; ++i) {
    lines.clear();
    std::istringstream in(serve.stderr_text());
    for (std::string line; std::getline(in, line);)
      if (line.find(" path=") != std::string::npos) lines.push_back(line);
    if (lines.size() < count) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return lines;
}

TEST(ServeFastPath, ACallNoStageCanActOnGoesOutWithoutAWorkerAndEveryOtherReasonRunsOne) {
  const fs::path dir = test::scratch_folder_until_exit("serve-fast-reasons");
  const std::string pipeline =
      "  - stage: compact_request\n    params: {tool_name: compact, max_chars: 3000}\n"
      "  - stage: budget_persist\n    params: {max_batch_chars: 6000, persist_chars: 1000, preview_chars: 100}\n"
      "  - stage: arrival\n    params: {max_chars: 4000, head_chars: 100, tail_chars: 100}\n"
      "  - stage: snip\n    params: {max_messages: 30, keep_head: 3}\n"
      "  - stage: micro\n    when: over_budget\n    params: {keep_recent: 1, min_chars: 100}\n";
  const std::string budget = "{unit: chars, limit: 20000, target: 15000}";
  const std::string config = write_config(dir, "c.yaml", budget, pipeline);
  const std::string every = write_config(dir, "every.yaml", budget, kEveryCall + pipeline);
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(16, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir, config, upstream.base_url(), "fast"), all(dir, every, upstream.base_url(), "every");

  const std::string read = turn("t1", "Read", R"({"file_path":"/a.py"})", text_of(1500, 'a'));
  struct Case {
    std::string name, body, why;  // why: empty for the fast path
  };
  std::vector<std::string> many;
  for (int i = 0; i < 16; ++i) many.push_back(turn("m" + std::to_string(i), "Read", R"({"file_path":"/m.py"})", "ok " + std::to_string(i)));
  const std::vector<Case> cases = {
      {"below the trigger", body_of({read, turn("t2", "Bash", R"({"command":"ls"})", "a.py b.py")}), ""},
      {"the model asked", body_of({read, turn("t2", "compact", "{}", "compacting")}), "compact_request: the newest turn calls compact"},
      {"a batch too large",
       body_of({read, R"({"role":"assistant","content":[{"type":"tool_use","id":"b1","name":"Read","input":{"file_path":"/b"}},)"
                      R"({"type":"tool_use","id":"b2","name":"Read","input":{"file_path":"/c"}}]},{"role":"user","content":[)"
                      R"({"type":"tool_result","tool_use_id":"b1","content":")" + text_of(3500, 'b') +
                          R"("},{"type":"tool_result","tool_use_id":"b2","content":")" + text_of(3500, 'c') + R"("}]})"}),
       "budget_persist: the newest batch of results is 7000 chars, over 6000"},
      {"a long new result", body_of({read, turn("t2", "Bash", R"({"command":"ls"})", text_of(4500, 'd'))}),
       "arrival: a new tool result is over 4000 chars"},
      {"a repeated result", body_of({read, turn("t2", "Read", R"({"file_path":"/a.py"})", text_of(1500, 'a'))}),
       "arrival: a new tool result repeats an earlier one"},
      {"many messages", body_of(many), "snip: 33 messages, over 30"},
      {"over the trigger", body_of({read, turn("t2", "Read", R"({"file_path":"/z"})", text_of(3900, 'z')),
                                    turn("t3", "Read", R"({"file_path":"/y"})", text_of(3900, 'y')),
                                    turn("t4", "Read", R"({"file_path":"/x"})", text_of(3900, 'x')),
                                    turn("t5", "Read", R"({"file_path":"/w"})", text_of(3900, 'w')),
                                    turn("t6", "Read", R"({"file_path":"/v"})", text_of(3900, 'v'))}),
       "over the trigger ("},
  };
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const std::size_t fast = calls_on(serve.port(), "fast"), worker = calls_on(serve.port(), "worker");
    Reply r = call(serve.port(), "POST", "/v1/messages", c.body);
    ASSERT_EQ(r.status, 200) << c.name << ": " << r.body;
    EXPECT_EQ(calls_on(serve.port(), "fast"), fast + (c.why.empty() ? 1 : 0)) << c.name;
    EXPECT_EQ(calls_on(serve.port(), "worker"), worker + (c.why.empty() ? 0 : 1)) << c.name;
    const std::vector<std::string> lines = done_lines(serve, k + 1);
    ASSERT_EQ(lines.size(), k + 1) << serve.stderr_text();
    if (c.why.empty()) {
      EXPECT_NE(lines.back().find(" path=fast"), std::string::npos) << c.name << ": " << lines.back();
      EXPECT_EQ(lines.back().find(" why="), std::string::npos) << c.name << ": " << lines.back();
      // What the worker would forward for it: the client's body, byte for byte.
      EXPECT_EQ(upstream.requests().back().body, c.body) << c.name;
      EXPECT_EQ(r.headers["x-compactor-status"], "unchanged") << c.name;
    } else {
      EXPECT_NE(lines.back().find(" path=worker why=" + c.why), std::string::npos) << c.name << ": " << lines.back();
    }
  }
  // A stage that declares no condition sees every call: the call below the trigger runs a worker.
  Reply r = call(all.port(), "POST", "/v1/messages", cases[0].body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(calls_on(all.port(), "worker"), 1u);
  EXPECT_EQ(calls_on(all.port(), "fast"), 0u);
  const std::vector<std::string> lines = done_lines(all, 1);
  ASSERT_EQ(lines.size(), 1u) << all.stderr_text();
  EXPECT_NE(lines[0].find(" path=worker why=misbehave: sees every call"), std::string::npos) << lines[0];
}

// The messages of a forwarded body, each as its bytes.
std::vector<std::string> messages_of(const std::string& body) {
  std::vector<std::string> out;
  const json::value parsed = json::parse(body);
  for (const auto& m : parsed.at("messages").as_array()) out.push_back(json::serialize(m));
  return out;
}

TEST(ServeFastPath, AStateEitherPathStoredIsContinuedByTheOther) {
  const fs::path dir = test::scratch_folder_until_exit("serve-fast-continue");
  const std::string config = write_config(dir, "c.yaml", "{unit: chars, limit: 20000, target: 12000}",
                                          "  - stage: micro\n    when: over_budget\n    params: {keep_recent: 1, min_chars: 100}\n");
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(8, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir, config, upstream.base_url());
  std::vector<std::string> turns;
  for (char c = 'a'; c < 'a' + 8; ++c)
    turns.push_back(turn(std::string("t") + c, "Read", R"({"file_path":"/)" + std::string(1, c) + R"("})", text_of(3000, c)));
  // 1. Below the trigger: the fast path stores the history as sent (the request itself).
  const std::string first = body_of({turns.begin(), turns.begin() + 5});
  ASSERT_EQ(call(serve.port(), "POST", "/v1/messages", first).status, 200);
  EXPECT_EQ(calls_on(serve.port(), "fast"), 1u);
  // 2. Over it: a worker compacts, continuing from the state the fast path stored.
  const std::string second = body_of(turns);
  Reply r = call(serve.port(), "POST", "/v1/messages", second);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["x-compactor-status"], "compacted");
  EXPECT_EQ(calls_on(serve.port(), "worker"), 1u);
  std::vector<std::string> lines = done_lines(serve, 2);
  ASSERT_EQ(lines.size(), 2u) << serve.stderr_text();
  EXPECT_NE(lines[1].find(" continued=11 "), std::string::npos) << lines[1];
  const std::vector<std::string> compacted = messages_of(upstream.requests().back().body);
  ASSERT_LT(upstream.requests().back().body.size(), second.size());
  // 3. One more small turn: below the trigger once continued from the compacted history, so the
  // fast path forwards that history and what arrived since, as a worker whose stages skip would.
  turns.push_back(turn("tz", "Bash", R"({"command":"ls"})", "a b"));
  r = call(serve.port(), "POST", "/v1/messages", body_of(turns));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(calls_on(serve.port(), "fast"), 2u);
  EXPECT_EQ(r.headers["x-compactor-status"], "unchanged");  // it forwards an earlier call's compaction
  const std::vector<std::string> third = messages_of(upstream.requests().back().body);
  ASSERT_EQ(third.size(), compacted.size() + 2);
  EXPECT_TRUE(std::equal(compacted.begin(), compacted.end(), third.begin()));
  lines = done_lines(serve, 3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[2].find(" continued=17 "), std::string::npos) << lines[2];
  EXPECT_EQ(metric(serve.port(), "compactor_serve_state_total{result=\"hit\"}"), 2u);
}

// The same call many times at once (a client that retries, a benchmark): the server's threads
// store the same state together, and none of those writes fails (each has a temporary of its own).
TEST(ServeFastPath, TheSameCallAtOnceStoresItsStateWithoutAFailure) {
  const fs::path dir = test::scratch_folder_until_exit("serve-fast-same");
  const std::string config = write_config(dir, "c.yaml", "{unit: chars, limit: 20000, target: 12000}",
                                          "  - stage: micro\n    when: over_budget\n    params: {keep_recent: 1, min_chars: 100}\n");
  constexpr int kClients = 8, kCalls = 25;
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(kClients * kCalls, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir, config, upstream.base_url());
  const std::string body = body_of({turn("t1", "Read", R"({"file_path":"/a"})", text_of(3000, 'a'))});
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&] {
      for (int k = 0; k < kCalls; ++k) EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", body).status, 200);
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(calls_on(serve.port(), "fast"), std::size_t{kClients * kCalls});
  EXPECT_EQ(metric(serve.port(), "compactor_serve_store_errors_total{op=\"state_put\"}"), 0u) << serve.stderr_text();
  EXPECT_EQ(serve.stderr_text().find("the store failed"), std::string::npos) << serve.stderr_text();
}

// A call sent again stores the same history under the same key: the state file is kept (no new
// file renamed over it) and only its time moves on (when the history was last sent).
TEST(ServeFastPath, AStateStoredAgainUnchangedIsOnlyMarkedAsSentNow) {
  const fs::path dir = test::scratch_folder_until_exit("serve-fast-again");
  const std::string config = write_config(dir, "c.yaml", "{unit: chars, limit: 20000, target: 12000}",
                                          "  - stage: micro\n    when: over_budget\n    params: {keep_recent: 1, min_chars: 100}\n");
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(2, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir, config, upstream.base_url());
  const std::string body = body_of({turn("t1", "Read", R"({"file_path":"/a"})", text_of(3000, 'a'))});
  auto state = [&] {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir / "archive" / "serve-state")) files.push_back(e.path());
    EXPECT_EQ(files.size(), 1u);
    struct stat st {};
    EXPECT_EQ(::stat(files.at(0).c_str(), &st), 0);
    return st;
  };
  ASSERT_EQ(call(serve.port(), "POST", "/v1/messages", body).status, 200);
  struct stat first = state();
  const struct timespec old_time = {1000000000, 0};  // 2001: the next call must move it on
  const struct timespec times[2] = {old_time, old_time};
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir / "archive" / "serve-state")) files.push_back(e.path());
  ASSERT_EQ(::utimensat(AT_FDCWD, files.at(0).c_str(), times, 0), 0);
  ASSERT_EQ(call(serve.port(), "POST", "/v1/messages", body).status, 200);
  struct stat second = state();
  EXPECT_EQ(second.st_ino, first.st_ino) << "the state file was written again";
  EXPECT_GT(second.st_mtim.tv_sec, old_time.tv_sec);
  EXPECT_EQ(calls_on(serve.port(), "fast"), 2u);
}

// A request body around a session's first `count` messages, the newest marked as agents mark it.
std::string session_body(const Conversation& c, std::size_t count) {
  std::string body = R"({"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are a coding agent.","messages":[)";
  for (std::size_t i = 0; i < count; ++i) {
    std::string raw(c[i].raw());
    if (i + 1 == count && raw.size() > 3 && raw.compare(raw.size() - 3, 3, "}]}") == 0)
      raw.insert(raw.size() - 3, R"(,"cache_control":{"type":"ephemeral"})");
    body += (i ? "," : "") + raw;
  }
  return body + "]}";
}

// Every bundled Claude Code session, call by call, through a server that takes the fast path
// where it can and one where a stage that sees every call sends each call to a worker: the
// upstream gets the same bytes from both, call by call, compacted calls included.
TEST(ServeFastPath, BothPathsForwardTheSameBytesForEveryCallOfTheBundledSessions) {
  const std::string pipeline =
      "  - stage: compact_request\n    params: {tool_name: compact, max_chars: 3000}\n"
      "  - stage: budget_persist\n    params: {max_batch_chars: 20000, persist_chars: 4000, preview_chars: 200}\n"
      "  - stage: arrival\n    params: {max_chars: 4000, head_chars: 1500, tail_chars: 1500}\n"
      "  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n"
      "  - stage: micro\n    when: over_budget\n    params: {keep_recent: 3, min_chars: 120}\n"
      "  - stage: summarize\n    when: over_budget\n    params: {max_chars: 1000, min_growth: 1000}\n";
  std::size_t calls = 0, fast = 0, compacted = 0;
  for (const char* name : {"cc-18240050-3ee8-41cd-a89a-0a5c4b709607.json", "cc-343e3472-b9b6-4561-ade0-21d1a4730c11.json",
                           "cc-f225835b-3612-4093-903f-bd4538fb7cb9.json", "cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json"}) {
    const fs::path dir = test::scratch_folder_until_exit(std::string("serve-fast-identity-") + name);
    fs::create_directories(dir / "f");
    fs::create_directories(dir / "w");
    const std::string budget = "{unit: chars, limit: 40000, target: 30000}";
    write_config(dir / "f", "c.yaml", budget, pipeline);
    write_config(dir / "w", "c.yaml", budget, kEveryCall + pipeline);
    const Conversation session = test::load_or_die(test::data_path(name));
    std::vector<std::size_t> cuts;
    for (std::size_t i = 1; i < session.size(); ++i)
      if (session[i].role() == Role::assistant) cuts.push_back(i);
    LoopbackHttpServer up_f(std::vector<ScriptedResponse>(cuts.size(), ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
    LoopbackHttpServer up_w(std::vector<ScriptedResponse>(cuts.size(), ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
    ServeProcess f(dir / "f", "c.yaml", up_f.base_url(), "f"), w(dir / "w", "c.yaml", up_w.base_url(), "w");
    for (std::size_t c = 0; c < cuts.size(); ++c) {
      const std::string body = session_body(session, cuts[c]);
      Reply a = call(f.port(), "POST", "/v1/messages", body), b = call(w.port(), "POST", "/v1/messages", body);
      ASSERT_EQ(a.status, 200) << name << " call " << c + 1;
      ASSERT_EQ(b.status, 200) << name << " call " << c + 1;
      for (const char* header : {"x-compactor-status", "x-compactor-size-before", "x-compactor-size-after"})
        EXPECT_EQ(a.headers[header], b.headers[header]) << name << " call " << c + 1 << ": " << header;
      compacted += up_f.requests().back().body != body;
    }
    const auto got_f = up_f.requests(), got_w = up_w.requests();
    ASSERT_EQ(got_f.size(), cuts.size());
    ASSERT_EQ(got_w.size(), cuts.size());
    for (std::size_t c = 0; c < cuts.size(); ++c) EXPECT_TRUE(got_f[c].body == got_w[c].body) << name << " call " << c + 1 << " differs";
    EXPECT_EQ(calls_on(w.port(), "fast"), 0u) << name;
    calls += cuts.size();
    fast += calls_on(f.port(), "fast");
  }
  std::printf("%zu calls, %zu through the fast path, %zu forwarded compacted\n", calls, fast, compacted);
  EXPECT_GT(fast, calls / 2);
  EXPECT_GT(compacted, 0u);
}

}  // namespace
}  // namespace compactor
