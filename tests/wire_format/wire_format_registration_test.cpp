// Adding a wire format is one file and one registration line (docs/serve.md, "Adding a wire
// format"): this program registers a team's own API (team_gateway_format.cpp) in its main and runs
// as serve and as serve's zygote itself (serve starts its zygote from /proc/self/exe), so the format
// is served end to end exactly as a built-in one: routed by its path, forwarded to its own upstream
// (serve.upstreams names it), compacted, its other endpoints passed through, its errors in its
// own shape, and its name known to the config's checks.
#include "team_checks.hpp"
#include "team_gateway_format.hpp"

#include "commands.hpp"
#include "loader/plugin_loader.hpp"
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include "serve/server.hpp"
#include "serve/zygote_main.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// This program as `serve`, in a folder, with the gateway's upstream; the port it listens on.
struct SelfServe {
  pid_t pid = -1;
  unsigned short port = 0;
  fs::path err;
  SelfServe(const fs::path& dir, const std::string& config, const std::string& gateway_upstream) : err(dir / "serve.err") {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe");
    pid = ::fork();
    if (pid == 0) {
      if (::chdir(dir.c_str()) != 0) ::_exit(127);
      ::dup2(out[1], 1);
      FILE* e = std::fopen(err.c_str(), "w");
      if (e != nullptr) ::dup2(fileno(e), 2);
      ::execl("/proc/self/exe", "self", "serve", config.c_str(), gateway_upstream.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    for (char c; ::read(out[0], &c, 1) == 1 && c != '\n';) line += c;
    ::close(out[0]);
    auto colon = line.rfind(':', line.find(' ', line.find("http://")));
    if (line.find("listening on") == std::string::npos) throw std::runtime_error("serve did not start: " + line);
    port = static_cast<unsigned short>(std::stoi(line.substr(colon + 1)));
  }
  ~SelfServe() {
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
};

std::string config(const fs::path& dir, const std::string& serve_section) {
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 150000, target: 100000}\narchive: {dir: archive}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n"
                                << "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 3, min_chars: 120}\n"
                                << "  - stage: summarize\n    when: over_budget\n    params: {max_chars: 1000}\n"
                                << serve_section;
  return (dir / "c.yaml").string();
}

TEST(WireFormatRegistration, ARegisteredFormatIsServedLikeABuiltInOne) {
  fs::path dir = test::scratch_folder_until_exit("wire-format-registration");
  Conversation session = test::load_or_die(test::data_path("cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json"));
  std::string body = R"({"model":"m","max_tokens":64,"messages":[)";
  for (std::size_t i = 0; i < session.size(); ++i) body += (i ? "," : "") + std::string(session[i].raw());
  body += "]}";
  test::LoopbackHttpServer gateway({{200, {}, R"({"ok":true})"}, {200, {}, R"({"usage":[]})"}});
  SelfServe serve(dir, config(dir, "serve: {max_body_bytes: 400000}\n"), gateway.base_url());

  test::Reply r = test::call(serve.port, "POST", "/gateway/v1/chat", body);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["x-compactor-status"], "compacted");
  r = test::call(serve.port, "GET", "/gateway/v1/usage");
  EXPECT_EQ(r.body, R"({"usage":[]})");
  EXPECT_EQ(r.headers["x-compactor-status"], "passed");
  auto got = gateway.requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].target, "/gateway/v1/chat");
  EXPECT_LT(got[0].body.size(), body.size() - 50000);
  EXPECT_EQ(got[1].target, "/gateway/v1/usage");

  // Its own error shape, for an error serve writes itself.
  r = test::call(serve.port, "POST", "/gateway/v1/chat", body + std::string(400000, ' '));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(json::parse(r.body).at("gateway_error").at("status"), 413);
  const std::string metrics = test::call(serve.port, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("compactor_serve_requests_total{route=\"gateway\",outcome=\"compacted\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("compactor_serve_requests_total{route=\"gateway_other\",outcome=\"passed\"} 1"), std::string::npos) << metrics;
}

TEST(WireFormatRegistration, TheConfigKnowsItsUpstreamKeyAndNamesItWhenMisspelled) {
  fs::path dir = test::scratch_folder_until_exit("wire-format-registration-config");
  const std::string file = config(dir, "serve:\n  upstreams: {gatway: http://127.0.0.1:9}\n");
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 2);
    ::execl("/proc/self/exe", "self", "serve", file.c_str(), "http://127.0.0.1:9", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string err;
  for (char c; ::read(out[0], &c, 1) == 1;) err += c;
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(err.find("c.yaml:13:15: serve.upstreams.gatway: no API is called \"gatway\"; the APIs are anthropic, openai, gemini, gateway"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace compactor

namespace {

// `self cli COMMAND …`: the command, as `compactor COMMAND …` runs it (its arguments from argv[2]).
int command(int argc, char** argv) {
  const std::string_view name = argv[1];
  if (name == "check") return compactor::cli::check_command(argc, argv);
  if (name == "run") return compactor::cli::run_command(argc, argv);
  if (name == "count") return compactor::cli::count_command(argc, argv);
  if (name == "import") return compactor::cli::import_command(argc, argv);
  if (name == "bench") return compactor::cli::bench_command(argc, argv);
  if (name == "serve") return compactor::cli::serve_command(argc, argv);
  return 2;
}

}  // namespace

// The registration lines (a wire format, a built-in checker, a stage), then this program's roles:
// serve, serve's zygote, one of the commands, or the tests.
int main(int argc, char** argv) {
  compactor::wire::register_wire_format(compactor::test::team_gateway_format());
  (void)compactor::PluginRegistry::instance().add_builtin(compactor::test::team_no_secrets_checker(), compactor::CheckerTraits{});
  (void)compactor::PluginRegistry::instance().add_builtin(compactor::test::team_summary_stage());
  const std::string_view role = argc > 1 ? argv[1] : "";
  if (role == "cli" && argc > 2) return command(argc - 1, argv + 1);
  if (role == "serve-worker" && argc >= 6) return compactor::serve::zygote_main(argv[3], 3, std::atoi(argv[5]));
  if (role == "serve" && argc == 4) {
    spdlog::set_default_logger(spdlog::stderr_logger_mt("serve"));
    compactor::serve::ServeOptions options;
    options.config_file = argv[2];
    options.listen = "127.0.0.1:0";
    options.upstreams["gateway"] = argv[3];
    options.version = "test";
    return compactor::serve::run_server(options);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
