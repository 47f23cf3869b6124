// How `compactor serve` runs pipelines: never in a child forked from the threaded server; in
// workers of a zygote, up to serve.workers at once; a worker killed mid-request fails that
// request open and nothing else; a `kill -9` of the server leaves no process behind and a
// restart on the same archive continues the conversations.
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

namespace compactor {
namespace {

namespace fs = std::filesystem;
using test::call;
using test::children_of;
using test::LoopbackHttpServer;
using test::Reply;
using test::ScriptedResponse;
using test::ServeProcess;

std::string config(const fs::path& dir, const std::string& pipeline, const std::string& extra = "") {
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\narchive: {dir: archive}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\", \"" << COMPACTOR_TEST_PLUGIN_DIR << "\"]\n"
                                << pipeline << extra;
  return "c.yaml";
}

std::string body_saying(const std::string& text) {
  return R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":")" + text + R"("}]})";
}

std::string cmdline(pid_t pid) {
  std::string s = test::read_file("/proc/" + std::to_string(pid) + "/cmdline");
  std::replace(s.begin(), s.end(), '\0', ' ');
  return s;
}

// The zygote: the server's one child running `compactor serve-worker`.
pid_t zygote_of(const ServeProcess& serve) {
  for (pid_t child : children_of(serve.pid()))
    if (cmdline(child).find(" serve-worker ") != std::string::npos) return child;
  return -1;
}

template <typename F>
bool eventually(F done, int ms = 20000) {
  for (int i = 0; i < ms / 10; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0 && test::read_file("/proc/" + std::to_string(pid) + "/stat").find(") Z ") == std::string::npos; }

// How a worker's SIGSEGV ends: by the signal, or, under AddressSanitizer (which handles SIGSEGV
// with its report), by exit status 1.
#if defined(__SANITIZE_ADDRESS__)
constexpr const char* kSegvEnd = "the worker exited with status 1";
#else
constexpr const char* kSegvEnd = "signal 11";
#endif

TEST(ServeWorkers, AWorkerKilledMidRequestFailsThatRequestOpenAndTheOthersAreUntouched) {
  test::ScratchFolder dir("serve-kill-worker");
  std::vector<ScriptedResponse> script(5, ScriptedResponse{200, {}, test::anthropic_reply("ok")});
  LoopbackHttpServer upstream(script);
  const fs::path log = dir / "stages.log", release = dir / "release";
  ServeProcess serve(dir.path(), config(dir.path(), "pipeline:\n  - stage: misbehave\n    params: {mode: hold}\n", "serve: {workers: 4}\n"),
                     upstream.base_url(), "serve", {{"COMPACTOR_TEST_STAGE_LOG", log.string()}, {"COMPACTOR_TEST_HOLD_FILE", release.string()}});
  const pid_t zygote = zygote_of(serve);
  ASSERT_GT(zygote, 0);
  std::vector<std::future<Reply>> replies;
  for (int i = 0; i < 4; ++i)
    replies.push_back(std::async(std::launch::async, [&, i] { return call(serve.port(), "POST", "/v1/messages", body_saying("call " + std::to_string(i))); }));
  // Four workers, each held in its stage until the test releases it: kill one with SIGKILL, one
  // with SIGSEGV, then release the other two.
  auto started = [&] {
    std::ifstream in(log);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) n += line.rfind("start ", 0) == 0;
    return n;
  };
  const bool all_held = eventually([&] { return started() == 4 && children_of(zygote).size() == 4; });
  std::vector<pid_t> workers = children_of(zygote);
  if (all_held) {
    ::kill(workers[0], SIGKILL);
    ::kill(workers[1], SIGSEGV);
  }
  std::ofstream(release) << "go";
  ASSERT_TRUE(all_held) << started() << " stages started, " << workers.size() << " workers";
  int failed = 0, unchanged = 0;
  for (auto& f : replies) {
    Reply r = f.get();
    EXPECT_EQ(r.status, 200);  // failed open: the upstream answered every one
    if (r.headers["x-compactor-status"] == "failed") {
      ++failed;
      const std::string& warning = r.headers["x-compactor-warning"];
      EXPECT_NE(warning.find("stage misbehave"), std::string::npos) << warning;
      EXPECT_TRUE(warning.find("signal 9") != std::string::npos || warning.find(kSegvEnd) != std::string::npos) << warning;
    } else {
      EXPECT_EQ(r.headers["x-compactor-status"], "unchanged");
      ++unchanged;
    }
  }
  EXPECT_EQ(failed, 2);
  EXPECT_EQ(unchanged, 2);
  // Every request reached the upstream as the client sent it.
  auto got = upstream.requests();
  ASSERT_EQ(got.size(), 4u);
  for (const auto& g : got) EXPECT_EQ(g.body.find(R"("content":"call )") != std::string::npos, true) << g.body;
  // The killed workers left no temporary archive file, and the next request gets a new worker.
  for (const auto& e : fs::recursive_directory_iterator(dir / "archive"))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  Reply next = call(serve.port(), "POST", "/v1/messages", body_saying("after"));
  EXPECT_EQ(next.headers["x-compactor-status"], "unchanged");
  EXPECT_EQ(zygote_of(serve), zygote);  // the same zygote, new workers
}

TEST(ServeWorkers, TheServerNeverForksAfterItsFirstThreadAndLoadsNoPlugin) {
  test::ScratchFolder dir("serve-no-fork");
  const std::string log = (dir / "forks.log").string();
  std::vector<ScriptedResponse> script(6, ScriptedResponse{200, {}, test::anthropic_reply("ok")});
  LoopbackHttpServer upstream(script);
  // Under AddressSanitizer the guard is preloaded before the sanitizer's runtime: allowed here.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options = std::string(asan != nullptr ? asan : "") + (asan != nullptr ? ":" : "") + "verify_asan_link_order=0";
  ServeProcess serve(dir.path(), config(dir.path(), "pipeline:\n  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n"),
                     upstream.base_url(), "serve",
                     {{"LD_PRELOAD", COMPACTOR_FORK_GUARD}, {"COMPACTOR_FORK_GUARD_LOG", log}, {"ASAN_OPTIONS", asan_options}});
  const pid_t server = serve.pid();
  std::vector<std::future<Reply>> replies;
  for (int i = 0; i < 4; ++i)
    replies.push_back(std::async(std::launch::async, [&, i] { return call(serve.port(), "POST", "/v1/messages", body_saying(std::to_string(i))); }));
  for (auto& f : replies) EXPECT_EQ(f.get().headers["x-compactor-status"], "unchanged");
  // A reload starts a new zygote while connection threads run.
  serve.signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return serve.stderr_text().find("reloaded") != std::string::npos; })) << serve.stderr_text();
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", body_saying("after reload")).headers["x-compactor-status"], "unchanged");

  // The server's memory holds no plugin: they are loaded by its zygote only.
  const std::string maps = test::read_file("/proc/" + std::to_string(serve.pid()) + "/maps");
  EXPECT_EQ(maps.find("compactor_stage_"), std::string::npos) << "the server process loaded a plugin";
  const pid_t zygote = zygote_of(serve);
  ASSERT_GT(zygote, 0);
  EXPECT_NE(test::read_file("/proc/" + std::to_string(zygote) + "/maps").find("compactor_stage_snip.so"), std::string::npos);
  serve.stop();
  const std::string forks = test::read_file(log);
  // The guard was in force in the server and in its zygotes (two: the first and the reload's).
  EXPECT_NE(forks.find("loaded pid " + std::to_string(server) + ":"), std::string::npos) << forks;
  EXPECT_GE(std::count(forks.begin(), forks.end(), '\n'), 3) << forks;
  EXPECT_EQ(forks.find("forked with threads"), std::string::npos) << forks;
}

// A reload's zygote replaces the one before, which ends (and is reaped) once no request holds
// it: after two reloads the server has one child, not three. The first one outlived every reload.
TEST(ServeWorkers, AReloadEndsTheZygoteItReplaces) {
  test::ScratchFolder dir("serve-reload-zygote");
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(2, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir.path(), config(dir.path(), "pipeline:\n  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n"),
                     upstream.base_url());
  const pid_t first = zygote_of(serve);
  ASSERT_GT(first, 0);
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", body_saying("before")).headers["x-compactor-status"], "unchanged");
  for (std::size_t reloads = 1; reloads <= 2; ++reloads) {
    if (reloads == 2) {  // the archive moves: said, since receipts sent before stay in the old one
      std::string text = test::read_file((dir / "c.yaml").string());
      text.replace(text.find("archive: {dir: archive}"), 23, "archive: {dir: archive-2}");
      std::ofstream(dir / "next.yaml") << text;
      fs::rename(dir / "next.yaml", dir / "c.yaml");
    }
    EXPECT_EQ(serve.stderr_text().find("the archive moved"), std::string::npos) << serve.stderr_text();
    serve.signal(SIGHUP);
    ASSERT_TRUE(eventually([&] {
      const std::string err = serve.stderr_text();
      std::size_t n = 0;
      for (std::size_t at = 0; (at = err.find("compactor serve: reloaded", at)) != std::string::npos; ++at) ++n;
      return n >= reloads;  // the file watcher may reload a changed file as well
    })) << serve.stderr_text();
  }
  EXPECT_NE(serve.stderr_text().find("): the archive moved (archive.dir or store): receipts sent before now restore only from the old one"), std::string::npos)
      << serve.stderr_text();
  EXPECT_TRUE(eventually([&] { return children_of(serve.pid()).size() == 1; })) << children_of(serve.pid()).size() << " children";
  EXPECT_FALSE(alive(first)) << "the first zygote outlived two reloads";
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", body_saying("after")).headers["x-compactor-status"], "unchanged");
}

TEST(ServeWorkers, NoMoreThanServeWorkersPipelinesRunAtOnce) {
  test::ScratchFolder dir("serve-worker-limit");
  const std::string log = (dir / "stages.log").string();
  std::vector<ScriptedResponse> script(4, ScriptedResponse{200, {}, test::anthropic_reply("ok")});
  LoopbackHttpServer upstream(script);
  ServeProcess serve(dir.path(), config(dir.path(), "pipeline:\n  - stage: misbehave\n    params: {mode: slow}\n", "serve: {workers: 2}\n"),
                     upstream.base_url(), "serve", {{"COMPACTOR_TEST_STAGE_LOG", log}});
  std::vector<std::future<Reply>> replies;
  for (int i = 0; i < 4; ++i)
    replies.push_back(std::async(std::launch::async, [&, i] { return call(serve.port(), "POST", "/v1/messages", body_saying(std::to_string(i))); }));
  for (auto& f : replies) EXPECT_EQ(f.get().headers["x-compactor-status"], "unchanged");  // queued, not refused
  // The stages' own notes: how many ran at once, at most.
  std::ifstream in(log);
  std::vector<std::pair<long long, int>> events;
  std::string what;
  for (long long t; in >> what >> t;) events.emplace_back(t, what == "start" ? 1 : -1);
  std::sort(events.begin(), events.end());
  int running = 0, most = 0;
  for (const auto& [t, delta] : events) most = std::max(most, running += delta);
  EXPECT_EQ(events.size(), 8u);
  EXPECT_EQ(most, 2);
}

TEST(ServeWorkers, AKillNineLeavesNoProcessAndARestartContinuesTheConversations) {
  test::ScratchFolder dir("serve-kill-nine");
  std::vector<ScriptedResponse> script(3, ScriptedResponse{200, {}, test::anthropic_reply("ok")});
  LoopbackHttpServer upstream(script);
  const std::string c = config(dir.path(), "pipeline:\n  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n");
  const std::string first = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  const std::string second =
      R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"ok"},{"role":"user","content":"and?"}]})";
  unsigned short port;
  pid_t zygote;
  {
    ServeProcess serve(dir.path(), c, upstream.base_url(), "a");
    port = serve.port();
    zygote = zygote_of(serve);
    ASSERT_GT(zygote, 0);
    EXPECT_EQ(call(port, "POST", "/v1/messages", first).headers["x-compactor-status"], "unchanged");
    serve.kill_hard();
  }
  // The zygote died with the server, and nothing holds the port.
  EXPECT_TRUE(eventually([&] { return !alive(zygote); })) << "the zygote outlived its server";
  ServeProcess again(dir.path(), c, upstream.base_url(), "b", {}, "127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(again.port(), port);
  EXPECT_EQ(call(port, "POST", "/v1/messages", second).headers["x-compactor-status"], "unchanged");
  // The restarted server continued the conversation from the state the first one stored.
  EXPECT_NE(call(port, "GET", "/metrics").body.find("compactor_serve_state_total{result=\"hit\"} 1"), std::string::npos);
}

}  // namespace
}  // namespace compactor
