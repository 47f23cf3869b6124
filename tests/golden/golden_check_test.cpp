// Golden end-to-end cases for `compactor check`: tests/golden/check/<case>/ holds input.json, a
// one-line intent.txt, expected_exit and expected_output (stdout on exit 0, stderr otherwise).
// The expected files are written by hand, never by the tool under test.
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace compactor {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> cases() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(std::string(COMPACTOR_GOLDEN_DIR) + "/check"))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

class GoldenCheck : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCheck, MatchesExpected) {
  std::string dir = std::string(COMPACTOR_GOLDEN_DIR) + "/check/" + GetParam();
  ASSERT_FALSE(test::read_file(dir + "/intent.txt").empty());
  std::string input_before = test::read_file(dir + "/input.json");
  int expected_exit = std::stoi(test::read_file(dir + "/expected_exit"));
  std::string expected = test::read_file(dir + "/expected_output");

  auto r = test::run_cli({"check", "--input", "input.json"}, "", dir);
  EXPECT_EQ(r.exit_code, expected_exit) << r.err;
  if (expected_exit == 0) {
    EXPECT_EQ(r.out, expected);
    EXPECT_EQ(r.err, "");
  } else {
    EXPECT_EQ(r.err, expected);
    EXPECT_EQ(r.out, "");
  }
  EXPECT_EQ(test::read_file(dir + "/input.json"), input_before) << "the input was modified";
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenCheck, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(CheckCommand, ReadsStdin) {
  auto r = test::run_cli({"check", "--input", "-"}, R"([{"role":"user","content":"hi"}])");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "OK <stdin>: 1 message (1 user, 0 assistant), 0 tool pairs, 30 chars, 30 bytes (messages array)\n");
}

// An unknown level is refused: taken as some default, it silenced every log without a word.
TEST(CheckCommand, AnUnknownLogLevelIsRefused) {
  ::setenv("COMPACTOR_LOG", "verbose", 1);
  auto r = test::run_cli({"check", "--input", "-"}, R"([{"role":"user","content":"hi"}])");
  ::unsetenv("COMPACTOR_LOG");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "compactor: COMPACTOR_LOG: unknown level \"verbose\"; expected debug, info, warn or error\n");
  EXPECT_EQ(r.out, "");
}

TEST(CheckCommand, UsageErrorsExit2) {
  auto r = test::run_cli({"check"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "compactor check: --input is required");
  r = test::run_cli({"check", "--input", "x", "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "compactor check: unknown option --bogus");
  r = test::run_cli({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "compactor: unknown command \"frobnicate\"");
}

TEST(CheckCommand, HelpAndVersion) {
  auto r = test::run_cli({"check", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("usage: compactor check --input FILE", 0), 0u);
  r = test::run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("plugin API 11\nfingerprint libstdcxx"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ncompiler gcc "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace compactor
