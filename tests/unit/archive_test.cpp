// The archive: receipts, restore, faults injected through the file-system seam, two processes on
// one folder, and the round trip from every stage's receipts back to the input's own bytes.
#include "support/test_support.hpp"

#include "archive/archive_store.hpp"
#include "host/pipeline.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <future>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace compactor {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) { return test::scratch_folder_until_exit("archive-" + name); }

std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.path().filename().string().find(".tmp") != std::string::npos) out.push_back(e.path().string());
  return out;
}

// The packs of an archive folder (<dir>/pack/<64 hex>.pack), sorted.
std::vector<fs::path> packs_in(const fs::path& archive_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(archive_dir / "pack", ec))
    if (e.path().extension() == ".pack") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// A snapshot put as pieces (messages' own bytes, never joined) is the same blob as its join: the
// same receipt, the same bytes restored; holds() and size_of() answer without reading it whole.
TEST(ArchiveStore, PiecesAreArchivedAsTheirJoin) {
  fs::path dir = scratch("pieces");
  std::string archive_dir = (dir / "a").string();
  // Small pieces go out in batches, one over the batch size directly: both paths, in order.
  std::string big(70000, 'x');
  big[0] = '[';
  big[69999] = ']';
  std::vector<std::string_view> pieces{"{\"a\":1}", "\n", big, "\n", "", "{\"b\":2}", "\n"};
  std::string joined;
  for (std::string_view p : pieces) joined += p;
  HashedBlob blob(pieces);
  EXPECT_EQ(blob.receipt(), receipt_of(joined));
  ArchiveStore store(archive_dir);
  ASSERT_TRUE(store.put("\"first\"").ok());  // the snapshot starts past the pack's first byte
  auto r = store.put(std::move(blob));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, receipt_of(joined));
  EXPECT_EQ(store.size_of(*r), joined.size());
  EXPECT_TRUE(store.holds(*r, 0, "{\"a\":1}\n["));
  EXPECT_TRUE(store.holds(*r, joined.size() - 8, "{\"b\":2}\n"));
  EXPECT_TRUE(store.holds(*r, 8, big));
  EXPECT_FALSE(store.holds(*r, 9, big));                      // one byte off
  EXPECT_FALSE(store.holds(*r, joined.size() - 1, "\n\n"));  // past the end
  EXPECT_FALSE(store.holds(receipt_of("other"), 0, ""));      // not this run's
  EXPECT_EQ(store.size_of(receipt_of("other")), std::nullopt);
  ASSERT_NE(store.find(*r), nullptr);
  EXPECT_EQ(*store.find(*r), joined);
  ASSERT_TRUE(store.commit().ok());
  EXPECT_EQ(*restore_blob(archive_dir, *r), joined);
  EXPECT_TRUE(store.holds(*r, 8, big));  // committed: read from the pack under its final name
  fs::remove_all(dir);
}

TEST(ArchiveStore, PutCommitRestoreAndDeduplicate) {
  fs::path dir = scratch("basic");
  std::string archive_dir = (dir / "a").string();
  ArchiveStore store(archive_dir);
  auto r1 = store.put("\"hello\"");
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(*r1, "sha256:5aa762ae383fbb727af3c7a36d4940a5b8c40a989452d2304fc958ff3f354e7a");
  EXPECT_EQ(*store.put("\"hello\""), *r1);  // same bytes, same receipt
  EXPECT_EQ(*store.find(*r1), "\"hello\"");
  EXPECT_FALSE(fs::exists(store.path_of(*r1)));  // not visible before commit
  ASSERT_TRUE(store.commit().ok());
  EXPECT_EQ(*store.find(*r1), "\"hello\"");  // read back from the pack under its final name
  EXPECT_TRUE(temp_files(dir).empty());
  // One pack per run, private; no loose file.
  auto packs = packs_in(archive_dir);
  ASSERT_EQ(packs.size(), 1u);
  EXPECT_EQ(packs[0].filename().string().size(), 64u + 5u);
  EXPECT_FALSE(fs::exists(store.path_of(*r1)));
  EXPECT_EQ((fs::status(packs[0]).permissions() & fs::perms::all), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ((fs::status(archive_dir).permissions() & fs::perms::all), fs::perms::owner_all);
  EXPECT_EQ((fs::status(fs::path(archive_dir) / "pack").permissions() & fs::perms::all), fs::perms::owner_all);
  EXPECT_EQ(*restore_blob(archive_dir, *r1), "\"hello\"");
  // A second store packing the same blobs the same way names its pack the same: either file serves.
  ArchiveStore again(archive_dir);
  EXPECT_EQ(*again.put("\"hello\""), *r1);
  ASSERT_TRUE(again.commit().ok());
  EXPECT_EQ(packs_in(archive_dir), packs);
  EXPECT_EQ(*restore_blob(archive_dir, *r1), "\"hello\"");
  // A store whose every blob was taken back leaves no pack and no temporary.
  {
    ArchiveStore taken_back(archive_dir);
    ArchiveStore::Mark mark = taken_back.mark();
    ASSERT_TRUE(taken_back.put("\"gone\"").ok());
    taken_back.revert_to(mark);
    ASSERT_TRUE(taken_back.commit().ok());
  }
  EXPECT_EQ(packs_in(archive_dir), packs);
  EXPECT_TRUE(temp_files(dir).empty());
  EXPECT_FALSE(restore_blob(archive_dir, receipt_of("\"gone\"")).ok());
  // Blobs taken back stay in the pack's file but not in its index.
  {
    ArchiveStore partly(archive_dir);
    ASSERT_TRUE(partly.put("kept 1").ok());
    ArchiveStore::Mark mark = partly.mark();
    ASSERT_TRUE(partly.put("taken back").ok());
    partly.revert_to(mark);
    ASSERT_TRUE(partly.put("kept 2").ok());
    ASSERT_TRUE(partly.commit().ok());
  }
  EXPECT_EQ(packs_in(archive_dir).size(), 2u);
  EXPECT_EQ(*restore_blob(archive_dir, receipt_of("kept 1")), "kept 1");
  EXPECT_EQ(*restore_blob(archive_dir, receipt_of("kept 2")), "kept 2");
  EXPECT_FALSE(restore_blob(archive_dir, receipt_of("taken back")).ok());
  fs::remove_all(dir);
}

TEST(ArchiveStore, RestoreRefusesWhatItCannotVerify) {
  fs::path dir = scratch("verify");
  ArchiveStore store(dir.string());
  std::string receipt = *store.put("[1,2,3]");
  ASSERT_TRUE(store.commit().ok());
  EXPECT_EQ(restore_blob(dir.string(), "sha256:XYZ").error().message,
            "\"sha256:XYZ\" is not a receipt (expected sha256: and 64 lowercase hex digits)");
  std::string other = receipt_of("nothing");
  EXPECT_EQ(restore_blob(dir.string(), other).error().message,
            dir.string() + ": no blob " + other + " in this archive (no loose file " + store.path_of(other) +
                ": No such file or directory; no pack indexes it)");
  // Run from another folder, the default relative archive is not there: said so, not "no blob".
  EXPECT_EQ(restore_blob((dir / "elsewhere").string(), receipt).error().message,
            (dir / "elsewhere").string() +
                ": no such archive folder (No such file or directory): nothing was archived there yet, or the archive "
                "is elsewhere (a relative archive.dir is read from the folder a command runs in; --archive names another)");
  // A pack whose bytes were changed gives nothing for the changed blob.
  auto packs = packs_in(dir);
  ASSERT_EQ(packs.size(), 1u);
  std::string pack = test::read_file(packs[0].string());
  ASSERT_EQ(pack.rfind("[1,2,3]", 0), 0u);
  pack[5] = '4';
  std::ofstream(packs[0], std::ios::trunc | std::ios::binary) << pack;
  EXPECT_EQ(restore_blob(dir.string(), receipt).error().message,
            dir.string() + ": no blob " + receipt + " in this archive (no loose file " + store.path_of(receipt) +
                ": No such file or directory; no pack indexes it)");
  // A loose file at a blob's name is read first, and verified.
  fs::create_directories(fs::path(store.path_of(receipt)).parent_path());
  std::ofstream(store.path_of(receipt), std::ios::trunc) << "[1,2,4]";
  EXPECT_EQ(restore_blob(dir.string(), receipt).error().message,
            store.path_of(receipt) + ": the blob does not match its hash (the archive is corrupted)");
  fs::remove_all(dir);
}

TEST(ArchiveStore, RollbackLeavesNothing) {
  fs::path dir = scratch("rollback");
  {
    ArchiveStore store(dir.string());
    ASSERT_TRUE(store.put("abc").ok());
    EXPECT_EQ(temp_files(dir).size(), 1u);
  }  // destroyed uncommitted
  EXPECT_TRUE(temp_files(dir).empty());
  fs::remove_all(dir);
}

TEST(Receipts, FoundInText) {
  std::string r = receipt_of("x");
  EXPECT_EQ(find_receipts("see " + r + "; or `compactor restore " + r + "`"), (std::vector<std::string>{r, r}));
  EXPECT_TRUE(find_receipts("sha256:abc").empty());
  EXPECT_TRUE(find_receipts(r + "0").empty());  // 65 hex digits is not a receipt
}

// ---- faults -----------------------------------------------------------------------------------

// The real file system, except that the k-th call of one kind fails the way it is told to.
class FaultyFileSystem final : public FileSystem {
 public:
  enum class Fault { write_errno, short_write, vanish_before_open, fsync_errno, read_errno };
  FaultyFileSystem(Fault fault, int err, int k, std::string dir) : fault_(fault), errno_(err), k_(k), dir_(std::move(dir)) {}

  int open_exclusive(const std::string& path, int mode) override {
    if (fault_ == Fault::vanish_before_open && ++opens_ == k_) fs::remove_all(dir_);
    return real().open_exclusive(path, mode);
  }
  ssize_t write(int fd, const void* data, std::size_t size) override {
    if (fault_ == Fault::write_errno && ++writes_ == k_) {
      errno = errno_;
      return -1;
    }
    if (fault_ == Fault::short_write && ++writes_ >= k_) {
      if (writes_ == k_ && size > 1) return real().write(fd, data, size / 2);  // half, then the disk is full
      return 0;
    }
    return real().write(fd, data, size);
  }
  int sync_filesystem(const std::string& p) override {
    if (fault_ == Fault::fsync_errno && ++syncs_ == k_) {
      errno = errno_;
      return -1;
    }
    return real().sync_filesystem(p);
  }
  ssize_t read_at(int fd, void* data, std::size_t size, off_t offset) override {
    if (fault_ == Fault::read_errno) {
      errno = errno_;
      return -1;
    }
    return real().read_at(fd, data, size, offset);
  }
  int close(int fd) override { return real().close(fd); }
  int rename(const std::string& a, const std::string& b) override { return real().rename(a, b); }
  int mkdir(const std::string& p, int mode) override { return real().mkdir(p, mode); }
  int unlink(const std::string& p) override { return real().unlink(p); }
  bool exists(const std::string& p) override { return real().exists(p); }

 private:
  static FileSystem& real() { return real_file_system(); }
  Fault fault_;
  int errno_, k_;
  std::string dir_;
  int opens_ = 0, writes_ = 0, syncs_ = 0;
};

class QuietLogger final : public StageLogger {
 public:
  void log(LogLevel, std::string_view) override {}
};

Pipeline build_pipeline(const fs::path& dir, const std::string& stages, const std::string& archive_dir) {
  std::string path = (dir / "p.yaml").string();
  std::ofstream(path) << "version: 1\nbudget: {limit: 100}\nrecent: {exchanges: 0}\narchive: {dir: \"" + archive_dir +
                             "\"}\nplugin_dirs: [\"" COMPACTOR_PLUGIN_DIR "\"]\npipeline:\n" + stages;
  auto loaded = load_pipeline_config(path);
  if (!loaded.config) throw std::runtime_error(loaded.errors.front());
  auto p = Pipeline::build(std::move(*loaded.config));
  if (!p) throw std::runtime_error(p.error().message);
  return std::move(p).value();
}

// Four 2,000-char results, so micro (keep_recent 0) archives four blobs; a thinking-free,
// closed history.
Conversation four_results() {
  std::string out = R"([{"role":"user","content":"read the logs"})";
  for (int i = 0; i < 4; ++i) {
    std::string id = "toolu_" + std::to_string(i);
    out += R"(,{"role":"assistant","content":[{"type":"tool_use","id":")" + id + R"(","name":"Read","input":{}}]})";
    out += R"(,{"role":"user","content":[{"type":"tool_result","tool_use_id":")" + id + R"(","content":")" +
           std::string(2000, static_cast<char>('a' + i)) + R"("}]})";
  }
  return test::parse_or_die(out + R"(,{"role":"assistant","content":"done"},{"role":"user","content":"thanks"}])");
}

// micro (keep_recent 0) over four_results(), archiving into <dir>/archive through `file_system`
// (the real one when null).
RunReport run_micro(const fs::path& dir, FileSystem* file_system) {
  Pipeline pipeline = build_pipeline(dir, "  - stage: micro\n    params: {keep_recent: 0}\n", (dir / "archive").string());
  QuietLogger log;
  RunOptions options;
  options.file_system = file_system;
  return pipeline.run(four_results(), options, log);
}

struct FaultCase {
  const char* name;
  FaultyFileSystem::Fault fault;
  int err;
  const char* text;  // how the errno reads
};

void PrintTo(const FaultCase& f, std::ostream* os) { *os << f.name; }

class ArchiveFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(ArchiveFault, TheStageDeclinesAndNothingChanges) {
  const FaultCase& f = GetParam();
  fs::path dir = scratch(std::string("fault-") + f.name);
  std::string archive_dir = (dir / "archive").string();
  // The second write fails; the folder vanishes before the run's one open (of its pack).
  FaultyFileSystem faulty(f.fault, f.err, f.fault == FaultyFileSystem::Fault::vanish_before_open ? 1 : 2, archive_dir);
  RunReport report = run_micro(dir, &faulty);

  ASSERT_EQ(report.stages.size(), 1u);
  EXPECT_EQ(report.stages[0].status, StageStatus::declined);
  EXPECT_EQ(report.stages[0].stage, "micro");
  EXPECT_NE(report.stages[0].reason.find("archive: cannot "), std::string::npos) << report.stages[0].reason;
  EXPECT_NE(report.stages[0].reason.find(archive_dir), std::string::npos) << report.stages[0].reason;
  EXPECT_NE(report.stages[0].reason.find(f.text), std::string::npos) << report.stages[0].reason;
  EXPECT_EQ(report.status, RunStatus::over_budget);  // micro declined: still over budget
  EXPECT_EQ(report.exit_code(), kExitNotDone);
  ASSERT_TRUE(report.output.has_value());
  EXPECT_EQ(report.output->serialize(), four_results().serialize());  // the last committed: the input
  EXPECT_TRUE(temp_files(dir).empty());
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Errnos, ArchiveFault,
    ::testing::Values(FaultCase{"ENOSPC", FaultyFileSystem::Fault::write_errno, ENOSPC, "No space left on device"},
                      FaultCase{"EIO", FaultyFileSystem::Fault::write_errno, EIO, "Input/output error"},
                      FaultCase{"EACCES", FaultyFileSystem::Fault::write_errno, EACCES, "Permission denied"},
                      FaultCase{"ENOTDIR", FaultyFileSystem::Fault::write_errno, ENOTDIR, "Not a directory"},
                      FaultCase{"short_write", FaultyFileSystem::Fault::short_write, 0, "(short write)"},
                      FaultCase{"vanished_folder", FaultyFileSystem::Fault::vanish_before_open, 0, "No such file or directory"}),
    [](const ::testing::TestParamInfo<FaultCase>& p) { return std::string(p.param.name); });

TEST(ArchiveFault, FailedSyncAtCommitFailsTheRunAndWritesNothing) {
  fs::path dir = scratch("fsync");
  std::string archive_dir = (dir / "archive").string();
  FaultyFileSystem faulty(FaultyFileSystem::Fault::fsync_errno, EIO, 1, archive_dir);
  RunReport report = run_micro(dir, &faulty);
  EXPECT_EQ(report.status, RunStatus::failed);
  EXPECT_EQ(report.exit_code(), kExitPluginError);
  EXPECT_FALSE(report.output.has_value());
  EXPECT_EQ(report.error, "archive: cannot sync " + archive_dir + ": Input/output error");
  EXPECT_TRUE(temp_files(dir).empty());
  fs::remove_all(dir);
}

// The run holds no packed blob in memory: the `archived` checker reads each back from the pack.
// One that cannot be read back is archived nowhere as far as the checker knows: the stage is
// rejected and nothing is committed, never passed unverified.
TEST(ArchiveFault, ABlobThatCannotBeReadBackRejectsTheStage) {
  fs::path dir = scratch("read-back");
  std::string archive_dir = (dir / "archive").string();
  FaultyFileSystem faulty(FaultyFileSystem::Fault::read_errno, EIO, 1, archive_dir);
  RunReport report = run_micro(dir, &faulty);
  ASSERT_EQ(report.stages.size(), 1u);
  EXPECT_EQ(report.stages[0].status, StageStatus::rejected);
  // Every result micro replaced (keep_recent 0: all four), each named.
  ASSERT_EQ(report.stages[0].violations.size(), 4u);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(report.stages[0].violation_lines()[static_cast<std::size_t>(i)].rfind(
                  "archived: messages." + std::to_string(2 * i + 2) + ": tool_result toolu_" + std::to_string(i) +
                      ": content was shortened or removed, but no receipt in it archives the original",
                  0),
              0u)
        << report.stages[0].violation_lines()[static_cast<std::size_t>(i)];
  ASSERT_TRUE(report.output.has_value());
  EXPECT_EQ(report.output->serialize(), four_results().serialize());
  EXPECT_TRUE(packs_in(archive_dir).empty());
  EXPECT_TRUE(temp_files(dir).empty());
  // Read back for real, the same blobs pass: the results are archived and committed.
  RunReport good = run_micro(dir, nullptr);
  ASSERT_EQ(good.stages.size(), 1u);
  EXPECT_EQ(good.stages[0].status, StageStatus::committed);
  EXPECT_EQ(packs_in(archive_dir).size(), 1u);
  fs::remove_all(dir);
}

// ---- two processes, one archive ------------------------------------------------------------

TEST(ArchiveSharing, TwoRunsInParallelOnOneFolderBothSucceed) {
  fs::path dir = scratch("parallel");
  std::ofstream(dir / "in.json") << four_results().serialize();
  std::ofstream(dir / "p.yaml") << "version: 1\nbudget: {limit: 100}\nrecent: {exchanges: 0}\narchive: {dir: shared}\n"
                                   "plugin_dirs: [\"" COMPACTOR_PLUGIN_DIR "\"]\npipeline:\n  - stage: micro\n    params: {keep_recent: 0}\n";
  auto run = [&](const std::string& out) {
    return test::run_cli({"run", "--config", "p.yaml", "--input", "in.json", "--output", out}, "", dir.string());
  };
  for (int round = 0; round < 5; ++round) {
    fs::remove_all(dir / "shared");
    auto a = std::async(std::launch::async, run, "a.json");
    auto b = std::async(std::launch::async, run, "b.json");
    auto ra = a.get(), rb = b.get();
    EXPECT_EQ(ra.exit_code, 1) << ra.err;  // still over the 100-char budget, as intended
    EXPECT_EQ(rb.exit_code, 1) << rb.err;
    std::string out = test::read_file((dir / "a.json").string());
    EXPECT_EQ(out, test::read_file((dir / "b.json").string()));
    auto receipts = find_receipts(out);
    EXPECT_EQ(receipts.size(), 4u + 1u);  // each marker names its receipt; the oldest, which says how to restore, twice
    for (const auto& r : receipts) EXPECT_TRUE(restore_blob((dir / "shared").string(), r).ok()) << r;
    EXPECT_TRUE(temp_files(dir).empty());
  }
  fs::remove_all(dir);
}

// ---- round trip ------------------------------------------------------------------------------

Conversation generated(int seed) {
  std::string out = R"([{"role":"user","content":"task )" + std::to_string(seed) + R"("})";
  for (int i = 0; i < 30 + seed; ++i) {
    std::string id = "toolu_" + std::to_string(seed) + "_" + std::to_string(i);
    out += R"(,{"role":"assistant","content":[{"type":"text","text":"step"},{"type":"tool_use","id":")" + id +
           R"(","name":"Bash","input":{"n":1.0}}]})";
    std::string body(static_cast<std::size_t>(200 + (i * 397 + seed * 131) % 3000), static_cast<char>('a' + i % 26));
    if (i % 5 == 0) body += "\\u00e9\\/\\n";  // escapes that must come back as written
    out += R"(,{"role":"user","content":[{"type":"tool_result","tool_use_id":")" + id + R"(","content":")" + body + R"("}]})";
  }
  return test::parse_or_die(out + "]");
}

TEST(ArchiveRoundTrip, EveryReceiptRestoresTheExactInputBytes) {
  std::vector<std::pair<std::string, std::string>> inputs;  // name, bytes
  for (const auto& f : test::real_session_files()) inputs.emplace_back(f, test::read_file(f));
  for (int seed = 0; seed < 6; ++seed) inputs.emplace_back("generated " + std::to_string(seed), generated(seed).serialize());
  const std::vector<std::string> stages = {
      "  - stage: budget_persist\n    params: {max_batch_chars: 1500, persist_chars: 400, preview_chars: 50}\n",
      "  - stage: snip\n    params: {max_messages: 20}\n",
      "  - stage: micro\n    params: {keep_recent: 3}\n",
  };
  int checked = 0;
  for (const auto& [name, bytes] : inputs) {
    for (const auto& stage : stages) {
      fs::path dir = scratch("roundtrip");
      std::string archive_dir = (dir / "archive").string();
      Pipeline pipeline = build_pipeline(dir, stage, archive_dir);
      QuietLogger log;
      Conversation input = test::parse_or_die(bytes);
      RunReport report = pipeline.run(input, {}, log);
      ASSERT_TRUE(report.output.has_value()) << name << ": " << report.error;
      ASSERT_NE(report.stages[0].status, StageStatus::rejected) << name << ": " << report.stages[0].violation_lines().front();
      std::string out = report.output->serialize();
      // One receipt per removal: each marker names its receipt, once, or twice when it also says
      // how to restore (archived as R; restore R).
      std::size_t markers = 0;
      for (std::size_t p = out.find("[compactor "); p != std::string::npos; p = out.find("[compactor ", p + 1)) ++markers;
      auto receipts = find_receipts(out);
      EXPECT_GE(receipts.size(), markers) << name;
      EXPECT_LE(receipts.size(), 2 * markers) << name;
      for (const auto& r : receipts) {
        auto restored = restore_blob(archive_dir, r);
        ASSERT_TRUE(restored.ok()) << restored.error().message;
        // Compared with the input file, not with the archive: every line restored (a content, or
        // a message of a JSONL snapshot) is a run of the input's own bytes.
        std::string_view rest = *restored;
        while (!rest.empty()) {
          std::size_t nl = rest.find('\n');
          std::string_view line = rest.substr(0, nl);
          EXPECT_NE(bytes.find(line), std::string::npos) << name << ": " << r << " restores bytes not in the input";
          ++checked;
          if (nl == std::string_view::npos) break;
          rest.remove_prefix(nl + 1);
        }
      }
      fs::remove_all(dir);
    }
  }
  EXPECT_GT(checked, 100);
  std::printf("%d restored pieces compared with their inputs\n", checked);
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

TEST(ArchiveCommands, GcRemovesOnlyBlobsOlderThanTheGivenDays) {
  fs::path dir = scratch("gc");
  // Two runs, two packs; the first one's is made 10 days old.
  ArchiveStore store((dir / "a").string());
  std::string old_receipt = *store.put("old bytes");
  ASSERT_TRUE(store.commit().ok());
  auto old_pack = packs_in(dir / "a");
  ASSERT_EQ(old_pack.size(), 1u);
  fs::last_write_time(old_pack[0], fs::file_time_type::clock::now() - std::chrono::hours(24 * 10));
  ArchiveStore later((dir / "a").string());
  std::string new_receipt = *later.put("new bytes");
  ASSERT_TRUE(later.commit().ok());
  ASSERT_EQ(packs_in(dir / "a").size(), 2u);
  auto r = test::run_cli({"archive", "gc", "--keep-days", "7", "--archive", (dir / "a").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "archive gc " + (dir / "a").string() + ": removed 1 file(s) older than 7 day(s), kept 1\n");
  EXPECT_FALSE(fs::exists(old_pack[0]));
  auto restored = test::run_cli({"restore", new_receipt, "--archive", (dir / "a").string()});
  EXPECT_EQ(restored.exit_code, 0);
  EXPECT_EQ(restored.out, "new bytes");
  auto gone = test::run_cli({"restore", old_receipt, "--archive", (dir / "a").string()});
  EXPECT_EQ(gone.exit_code, 2);
  EXPECT_EQ(gone.err.rfind("compactor restore: " + (dir / "a").string() + ": no blob " + old_receipt + " in this archive", 0), 0u)
      << gone.err;
  fs::remove_all(dir);
}

TEST(ArchiveCommands, GcRemovesContinuityStateOlderThanTheGivenDaysAndOrphanedTemporaries) {
  fs::path dir = scratch("gc-state");
  const fs::path state = dir / "a" / "serve-state";
  fs::create_directories(state);
  const std::string old_key(64, 'a'), new_key(64, 'b'), other(64, 'c');
  std::ofstream(state / (old_key + ".json")) << "=";
  std::ofstream(state / (new_key + ".json")) << "[]";
  // A temporary of a process that is gone (pid 2^22 + 1 is above the kernel's limit), and a
  // file serve never writes: the first goes whatever its age, the second stays.
  std::ofstream(state / (other + ".json.tmp.4194305.0")) << "[";
  std::ofstream(state / "notes.txt") << "mine";
  fs::last_write_time(state / (old_key + ".json"), fs::file_time_type::clock::now() - std::chrono::hours(24 * 10));
  fs::last_write_time(state / "notes.txt", fs::file_time_type::clock::now() - std::chrono::hours(24 * 10));
  auto r = test::run_cli({"archive", "gc", "--keep-days", "7", "--archive", (dir / "a").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "archive gc " + (dir / "a").string() +
                       ": removed 2 file(s) older than 7 day(s) or left by a process that is gone (1) (2 of them continuity "
                       "state), kept 1\n");
  EXPECT_FALSE(fs::exists(state / (old_key + ".json")));
  EXPECT_FALSE(fs::exists(state / (other + ".json.tmp.4194305.0")));
  EXPECT_TRUE(fs::exists(state / (new_key + ".json")));
  EXPECT_TRUE(fs::exists(state / "notes.txt"));
  fs::remove_all(dir);
}

// The archive trusts nothing it did not just write.
TEST(ArchiveTrust, AFileAlreadyAtABlobsNameIsVerifiedAndReplacedWhenWrong) {
  fs::path dir = scratch("trust-planted");
  std::string archive_dir = (dir / "a").string();
  std::string receipt;
  {
    ArchiveStore store(archive_dir);
    receipt = *store.put("the original");
    ASSERT_TRUE(store.commit().ok());
  }
  std::string path = ArchiveStore(archive_dir).path_of(receipt);
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::trunc) << "corrupted";
  {
    ArchiveStore store(archive_dir);
    EXPECT_EQ(*store.put("the original"), receipt);
    ASSERT_TRUE(store.commit().ok());
  }
  EXPECT_EQ(*restore_blob(archive_dir, receipt), "the original");
  // A planted symlink to /dev/null at the blob's name is replaced by the blob itself.
  fs::remove(path);
  fs::create_symlink("/dev/null", path);
  {
    ArchiveStore store(archive_dir);
    EXPECT_EQ(*store.put("the original"), receipt);
    ASSERT_TRUE(store.commit().ok());
  }
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(*restore_blob(archive_dir, receipt), "the original");
  fs::remove_all(dir);
}

TEST(ArchiveTrust, RestoreRefusesASymlinkOrAFifoAsABlob) {
  fs::path dir = scratch("trust-restore");
  std::string receipt = receipt_of("bytes");
  std::string path = ArchiveStore(dir.string()).path_of(receipt);
  fs::create_directories(fs::path(path).parent_path());
  fs::create_symlink("/dev/zero", path);
  auto r = restore_blob(dir.string(), receipt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, path + ": is a symbolic link, not a blob (the archive was tampered with)");
  fs::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  r = restore_blob(dir.string(), receipt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, path + ": is not a regular file, not a blob (the archive was tampered with)");
  fs::remove_all(dir);
}

TEST(ArchiveTrust, AFolderOthersCanWriteIsRefused) {
  fs::path dir = scratch("trust-folder");
  fs::permissions(dir, fs::perms::all);  // 0777
  {
    ArchiveStore store(dir.string());
    auto r = store.put("bytes");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "archive: " + dir.string() + " is writable by every user (mode 0777), who could plant or "
                                 "remove blobs; run chmod o-w on it or use a folder of your own");
  }
  fs::permissions(dir, fs::perms::owner_all);
  if (::geteuid() == 0) {  // only root can give a folder away
    ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
    ArchiveStore store(dir.string());
    auto r = store.put("bytes");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "archive: " + dir.string() + " belongs to another user (uid 65534; this is uid 0), who "
                                 "could plant or remove blobs; use a folder of your own");
  }
  EXPECT_TRUE(temp_files(dir).empty());
  fs::remove_all(dir);
}

// The refusal above reaches the user before any stage declines: `run` (like `serve` and
// `validate`, which build the pipeline the same way) warns once when it starts, and the stage's
// decline still says why.
TEST(ArchiveTrust, RunWarnsOfAFolderOthersCanWrite) {
  fs::path dir = scratch("trust-warn");
  fs::create_directory(dir / "shared");
  fs::permissions(dir / "shared", fs::perms::all);  // 0777
  std::ofstream(dir / "in.json") << four_results().serialize();
  std::ofstream(dir / "p.yaml") << "version: 1\nbudget: {limit: 100}\nrecent: {exchanges: 0}\narchive: {dir: shared}\n"
                                   "plugin_dirs: [\"" COMPACTOR_PLUGIN_DIR "\"]\npipeline:\n  - stage: micro\n    params: {keep_recent: 0}\n";
  auto r = test::run_cli({"run", "--config", "p.yaml", "--input", "in.json", "--output", "out.json"}, "", dir.string());
  EXPECT_EQ(r.exit_code, 1) << r.err;  // nothing could be archived: still over budget
  const std::string warning = "compactor: warning: archive: shared is writable by every user (mode 0777), who could plant "
                              "or remove blobs; run chmod o-w on it or use a folder of your own; until then every stage "
                              "that archives declines\n";
  EXPECT_EQ(r.err.find(warning), 0u) << r.err;
  EXPECT_EQ(r.err.find(warning, 1), std::string::npos) << r.err;  // once
  EXPECT_EQ(test::read_file((dir / "out.json").string()), four_results().serialize());
  fs::permissions(dir / "shared", fs::perms::owner_all);
  r = test::run_cli({"run", "--config", "p.yaml", "--input", "in.json", "--output", "out.json"}, "", dir.string());
  EXPECT_EQ(r.err.find("warning: archive"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(ArchiveTrust, GcIsBoundedAndTouchesOnlyTheArchivesOwnFiles) {
  fs::path dir = scratch("trust-gc");
  fs::path archive = dir / "a";
  std::string receipt;
  {
    ArchiveStore store(archive.string());
    receipt = *store.put("kept bytes");
    ASSERT_TRUE(store.commit().ok());
  }
  auto packs = packs_in(archive);
  ASSERT_EQ(packs.size(), 1u);
  std::string blob = packs[0].string();  // the run's pack holds it
  auto old = fs::file_time_type::clock::now() - std::chrono::hours(24 * 400);
  // Files that are not the archive's: old, but never removed.
  std::ofstream(archive / "notes.txt") << "mine";
  std::ofstream(fs::path(blob).parent_path() / "notes.txt") << "mine";
  fs::last_write_time(archive / "notes.txt", old);
  fs::last_write_time(fs::path(blob).parent_path() / "notes.txt", old);
  // Temporaries: one of a process that is gone (a child that exited), one of this live process.
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  std::string dead_temp = (archive / "pack" / ("pack.tmp." + std::to_string(child) + ".0")).string();
  std::string live_temp = (archive / "pack" / ("pack.tmp." + std::to_string(::getpid()) + ".0")).string();
  // … and a loose blob's temporary of the process that is gone.
  fs::create_directories(archive / "ab");
  std::string dead_loose = (archive / "ab" / ("ab" + std::string(62, '0') + ".tmp." + std::to_string(child) + ".1")).string();
  std::ofstream(dead_temp) << "x";
  std::ofstream(live_temp) << "x";
  std::ofstream(dead_loose) << "x";

  auto r = test::run_cli({"archive", "gc", "--keep-days", "60000", "--archive", archive.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "compactor archive gc: --keep-days takes a whole number of days from 0 to 36500");
  r = test::run_cli({"archive", "gc", "--keep-days", "7", "--archive", archive.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "archive gc " + archive.string() + ": removed 2 file(s) older than 7 day(s) or left by a process that is gone (2), kept 2\n");
  EXPECT_FALSE(fs::exists(dead_temp));
  EXPECT_FALSE(fs::exists(dead_loose));
  EXPECT_TRUE(fs::exists(live_temp));
  EXPECT_TRUE(fs::exists(blob));
  EXPECT_TRUE(fs::exists(archive / "notes.txt"));
  EXPECT_TRUE(fs::exists(fs::path(blob).parent_path() / "notes.txt"));
  // A symlinked archive folder is not followed: the file it points at stays.
  fs::create_directories(dir / "elsewhere" / "ab");
  std::string outside = (dir / "elsewhere" / "ab" / std::string(64, 'a')).string();
  outside.replace(outside.size() - 64, 2, "ab");
  std::ofstream(outside) << "not yours";
  fs::last_write_time(outside, old);
  fs::create_directory_symlink(dir / "elsewhere", dir / "link");
  r = test::run_cli({"archive", "gc", "--keep-days", "0", "--archive", (dir / "link").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "compactor archive gc: " + (dir / "link").string() + ": is a symbolic link; give the archive folder itself\n");
  EXPECT_TRUE(fs::exists(outside));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace compactor
