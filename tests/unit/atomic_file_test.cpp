#include "host/atomic_file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;

TEST(AtomicFile, WritesTheWholeFileAndLeavesNoTemporary) {
  fs::path dir = fs::temp_directory_path() / ("compactor-atomic-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string target = (dir / "out.json").string();
  std::ofstream(target) << "old";
  ASSERT_TRUE(write_file_atomically(target, "new contents").ok());
  std::stringstream s;
  s << std::ifstream(target).rdbuf();
  EXPECT_EQ(s.str(), "new contents");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

TEST(AtomicFile, FailureNamesThePathAndLeavesNothing) {
  auto r = write_file_atomically("/nonexistent-dir/out.json", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "/nonexistent-dir/out.json: cannot create a temporary file beside it: No such file or directory");
}

}  // namespace
}  // namespace compactor
