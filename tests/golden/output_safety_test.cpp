// Outputs never replace inputs, and a failed write leaves every target as it was: the
// same file under another name, stdin redirected from the output, the report named like the
// output, the config as output, a private output's mode, an unwritable report.
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace compactor {
namespace {

namespace fs = std::filesystem;

class OutputSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("compactor-outputs-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "in.json") << kInput;
    std::ofstream(dir_ / "p.yaml") << "version: 1\nbudget: {unit: chars, limit: 100000}\npipeline: []\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  test::CommandResult run(const std::vector<std::string>& args) { return test::run_cli(args, "", dir_.string()); }
  std::string read(const std::string& name) const { return test::read_file((dir_ / name).string()); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  static constexpr const char* kInput = R"([{"role":"user","content":"hi"}])";
  fs::path dir_;
};

TEST_F(OutputSafety, RunRefusesAnOutputThatIsStdinsFile) {
  auto r = test::run_cli_stdin_from({"run", "--config", "p.yaml", "--input", "-", "--output", "in.json"},
                                    (dir_ / "in.json").string(), dir_.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "compactor run: in.json: refusing to overwrite the input\n");
  EXPECT_EQ(read("in.json"), kInput);
  // Another name for the same file is the same file.
  fs::create_hard_link(dir_ / "in.json", dir_ / "alias.json");
  r = run({"run", "--config", "p.yaml", "--input", "in.json", "--report", "alias.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "compactor run: alias.json: refusing to overwrite the input\n");
  EXPECT_EQ(read("in.json"), kInput);
}

TEST_F(OutputSafety, RunRefusesTheReportOverTheOutputAndTheConfig) {
  auto r = run({"run", "--config", "p.yaml", "--input", "in.json", "--output", "x.json", "--report", "./x.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "compactor run: ./x.json: --output and --report name the same file\n");
  r = run({"run", "--config", "p.yaml", "--input", "in.json", "--output", "p.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "compactor run: p.yaml: refusing to overwrite the config\n");
  // Both on stdout would be two JSON documents run together: refused, nothing written.
  r = run({"run", "--config", "p.yaml", "--input", "in.json", "--output", "-", "--report", "-"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "compactor run: --output and --report both name stdout (-); give one of them a file\n");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(names(), (std::vector<std::string>{"in.json", "p.yaml"}));
  r = run({"calibrate", "--corpus", test::data_path("claude-code"), "--out", "fit.yaml", "--report", "./fit.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "compactor calibrate: ./fit.yaml: --out and --report name the same file\n");
}

TEST_F(OutputSafety, ImportRefusesToReplaceItsInput) {
  auto r = run({"import", "--input", "in.json", "--output", "in.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "compactor import: in.json: refusing to overwrite the input\n");
  EXPECT_EQ(read("in.json"), kInput);
}

// It printed "OK in.json: …" and then the write's failure: the verdict now follows the writes.
TEST_F(OutputSafety, ImportSaysOkOnlyOnceItsOutputIsWritten) {
  auto r = run({"import", "--input", "in.json", "--output", "no-such-dir/out.json"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "compactor import: no-such-dir/out.json: cannot create a temporary file beside it: No such file or directory\n");
  r = run({"import", "--input", "in.json", "--output", "out.json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("OK in.json: ", 0), 0u) << r.out;
  EXPECT_EQ(read("out.json"), kInput);
}

TEST_F(OutputSafety, APrivateOutputStaysPrivate) {
  std::ofstream(dir_ / "out.json") << "old";
  fs::permissions(dir_ / "out.json", fs::perms::owner_read | fs::perms::owner_write);
  auto r = run({"run", "--config", "p.yaml", "--input", "in.json", "--output", "out.json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read("out.json"), kInput);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "out.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(OutputSafety, AnUnwritableReportLeavesTheOutputAsItWas) {
  std::ofstream(dir_ / "out.json") << "old";
  auto r = run({"run", "--config", "p.yaml", "--input", "in.json", "--output", "out.json", "--report", "no-such-dir/r.json"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "compactor run: no-such-dir/r.json: cannot create a temporary file beside it: No such file or directory\n");
  EXPECT_EQ(read("out.json"), "old");
  EXPECT_EQ(names(), (std::vector<std::string>{"in.json", "out.json", "p.yaml"}));  // no temporary left
}

// The dynamic loader reads an empty RUNPATH entry as the working folder, and CMake's build tree
// gave every binary one: `build/bin/compactor` run here loaded a planted libnettle.so.8. Planted
// under the name of every library the CLI, the framework, the plugins and the meters load
// (ICU by dlopen), none may be taken.
TEST_F(OutputSafety, NoLibraryIsLoadedFromTheWorkingFolder) {
  for (const char* name : {"libcompactor_framework.so", "libboost_json.so.1.81.0", "libfmt.so.9", "libyaml-cpp.so.0.7",
                           "libnettle.so.8", "libicuuc.so.72", "libstdc++.so.6", "libgcc_s.so.1"})
    fs::copy_file(COMPACTOR_PLANTED_LIBRARY, dir_ / name);
  std::ofstream(dir_ / "nfkc.json") << R"([{"role":"user","content":"\ufb01sh \u2026 \u2460"}])";
  const std::string config = std::string(COMPACTOR_CONFIGS_DIR) + "/default.yaml";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--version"},
           {"validate", "--config", config},
           {"run", "--config", config, "--input", "in.json", "--output", "out.json"},
           {"count", "--input", "nfkc.json", "--meter", "claude-legacy"}}) {
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "planted-library-was-loaded")) << args[0] << " loaded a library from its working folder";
  }
}

}  // namespace
}  // namespace compactor
