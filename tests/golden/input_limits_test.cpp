// Inputs are regular files or stdin, at most COMPACTOR_MAX_INPUT_BYTES: a directory, a FIFO with no
// writer, /dev/zero, an endless stdin and an oversized file are each one line and exit 2, for every
// command that reads a conversation.
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace compactor {
namespace {

namespace fs = std::filesystem;

class InputLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("compactor-inputs-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "folder");
    std::ofstream(dir_ / "in.json") << R"([{"role":"user","content":"hi"}])";
    std::ofstream(dir_ / "p.yaml") << "version: 1\nbudget: {unit: chars, limit: 100000}\npipeline: []\n";
  }
  void TearDown() override {
    ::unsetenv("COMPACTOR_MAX_INPUT_BYTES");
    fs::remove_all(dir_);
  }
  test::CommandResult run(const std::vector<std::string>& args) { return test::run_cli(args, "", dir_.string()); }

  // Every command that reads a conversation, on `input`.
  std::vector<std::vector<std::string>> commands(const std::string& input) const {
    return {{"check", "--input", input},
            {"run", "--config", "p.yaml", "--input", input},
            {"import", "--input", input},
            {"count", "--input", input}};
  }

  // import prints its verdict as a FAIL line on stdout; the others on stderr.
  static std::string said(const std::vector<std::string>& args, const test::CommandResult& r) {
    return args[0] == "import" ? r.out : r.err;
  }
  static std::string line(const std::vector<std::string>& args, const std::string& text) {
    return (args[0] == "import" ? "FAIL " : "") + text + "\n";
  }

  fs::path dir_;
};

// A bad --input-format is a usage error, found with the other options: `check`, `count` and
// `run` printed the bare message (run's from its pipeline's process) where `import` said whose.
TEST_F(InputLimits, ABadInputFormatIsAUsageErrorOfEveryCommand) {
  for (auto args : commands("in.json")) {
    args.insert(args.end(), {"--input-format", "xml"});
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    // import turns logs into messages; the others also read any wire format's request.
    const std::string names = args[0] == "import" ? "auto, anthropic, claude-code, codex, gemini-cli or openai"
                                                  : "auto, anthropic, claude-code, codex, gemini, gemini-cli, openai or responses";
    EXPECT_EQ(r.err.rfind("compactor " + args[0] + ": --input-format takes " + names + ", got \"xml\"\nusage: ", 0), 0u)
        << args[0] << ": " << r.err;
    EXPECT_EQ(r.out, "") << args[0];
  }
}

TEST_F(InputLimits, ADirectoryIsNotAnInput) {
  for (const auto& args : commands("folder")) {
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(said(args, r), line(args, "folder: is a directory, not a regular file; give a file, or - for stdin")) << args[0];
  }
}

TEST_F(InputLimits, DevZeroAndAFifoWithNoWriterAreRefusedAtOnce) {
  for (const auto& args : commands("/dev/zero")) {
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(said(args, r), line(args, "/dev/zero: is a character device, not a regular file; give a file, or - for stdin")) << args[0];
  }
  // A config is read the same way.
  auto config = run({"validate", "--config", "/dev/zero"});
  EXPECT_EQ(config.exit_code, 2);
  EXPECT_EQ(config.err, "/dev/zero: is a character device, not a regular file; give a file, or - for stdin\n");
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  for (const auto& args : commands("fifo")) {
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(said(args, r), line(args, "fifo: is a FIFO, not a regular file; give a file, or - for stdin")) << args[0];
  }
}

TEST_F(InputLimits, AnEndlessStdinStopsAtTheLimit) {
  ::setenv("COMPACTOR_MAX_INPUT_BYTES", "1000000", 1);
  for (const auto& args : commands("-")) {
    auto r = test::run_cli_stdin_from(args, "/dev/zero", dir_.string());
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(said(args, r), line(args, "<stdin>: larger than the input limit of 1000000 bytes (COMPACTOR_MAX_INPUT_BYTES raises it)")) << args[0];
  }
}

TEST_F(InputLimits, AFileOverTheLimitIsRefusedAndTheLimitIsChecked) {
  ::setenv("COMPACTOR_MAX_INPUT_BYTES", "10", 1);
  auto r = run({"check", "--input", "in.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "in.json: larger than the input limit of 10 bytes (COMPACTOR_MAX_INPUT_BYTES raises it)\n");
  std::string exact = std::to_string(fs::file_size(dir_ / "in.json"));
  ::setenv("COMPACTOR_MAX_INPUT_BYTES", exact.c_str(), 1);  // exactly the file's size
  r = run({"check", "--input", "in.json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ::setenv("COMPACTOR_MAX_INPUT_BYTES", "lots", 1);
  r = run({"check", "--input", "in.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "COMPACTOR_MAX_INPUT_BYTES: expected a positive number of bytes, got \"lots\"\n");
}

}  // namespace
}  // namespace compactor
