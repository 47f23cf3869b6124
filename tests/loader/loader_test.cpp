// The loader against real fixture plugins (MODULE libraries built by compactor_add_stage). Each
// refusal or failure is asserted as the exact one-line error a user would see.
#include "support/test_support.hpp"

#include "compactor/build_fingerprint.hpp"

#include "host/pipeline_config.hpp"
#include "loader/plugin_discovery.hpp"
#include "loader/plugin_loader.hpp"
#include "archive/archive_store.hpp"

#include "compactor/archive.hpp"
#include "compactor/message_edit.hpp"
#include "compactor/testkit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace compactor {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(FIXTURE_DIR) + "/compactor_stage_" + name + ".so"; }
std::string marker(const std::string& name) { return std::string(MARKER_DIR) + "/" + name + ".marker"; }

std::string replace(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}

std::string load_error(const std::string& file) {
  auto r = PluginRegistry::instance().load(file);
  EXPECT_FALSE(r.ok()) << file << " loaded";
  return r.ok() ? "" : r.error().message;
}

class NullLogger final : public StageLogger {
 public:
  void log(LogLevel, std::string_view) override {}
};

// A stage's archive that these pass-through runs never write (nothing is committed).
std::string unused_archive_dir() { return (fs::temp_directory_path() / ("compactor-loader-unused-" + std::to_string(::getpid()))).string(); }

Conversation small() { return test::parse_or_die(R"([{"role":"user","content":"hi"}])"); }

// A fixture's pass-through stage, created and run through the host's guarded calls, returns its
// input's messages.
void expect_pass_through_runs(const RegisteredStage& stage) {
  auto instance = create_stage(stage, {});
  ASSERT_TRUE(instance.ok()) << instance.error().message;
  NullLogger log;
  ArchiveStore archive(unused_archive_dir());
  StageContext context(archive, log);
  Conversation c = small();
  auto result = run_stage(**instance, stage, c, context);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->messages()[0], c.messages()[0]);
}

TEST(Loader, GoodPluginLoadsRegistersAndRuns) {
  fs::remove(marker("fixture_good"));
  auto loaded = PluginRegistry::instance().load(fixture("fixture_good"));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded.value()->name, "fixture_good");
  EXPECT_EQ(loaded.value()->version, "1.2.3");
  EXPECT_EQ(loaded.value()->api_version, COMPACTOR_FP_API);
  EXPECT_EQ(loaded.value()->stages, std::vector<std::string>{"fixture_good"});
  // Control for the refusal tests: a loaded plugin's static constructor does leave its marker.
  EXPECT_TRUE(fs::exists(marker("fixture_good")));

  const RegisteredStage* stage = PluginRegistry::instance().find_stage("fixture_good");
  ASSERT_NE(stage, nullptr);
  EXPECT_EQ(stage->file(), fs::canonical(fixture("fixture_good")).string());
  expect_pass_through_runs(*stage);
}

TEST(Loader, SameFileLoadedTwiceIsOneLibrary) {
  std::string link = std::string(FIXTURE_DIR) + "/link_to_good.so";
  fs::remove(link);
  fs::create_symlink(fixture("fixture_good"), link);
  auto a = PluginRegistry::instance().load(fixture("fixture_good"));
  auto b = PluginRegistry::instance().load(link);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(a.value(), b.value());
}

TEST(Loader, WrongApiVersionIsRefusedBeforeAnyPluginCodeRuns) {
  fs::remove(marker("fixture_wrong_api"));
  EXPECT_EQ(load_error(fixture("fixture_wrong_api")),
            fixture("fixture_wrong_api") + ": plugin API version 999, but this host implements version 11; rebuild the plugin against this Compactor");
  EXPECT_FALSE(fs::exists(marker("fixture_wrong_api"))) << "the refused plugin's static constructor ran";
  auto probe = probe_plugin(fixture("fixture_wrong_api"));
  EXPECT_FALSE(probe.loadable);
  EXPECT_EQ(probe.api_version, 999);
}

TEST(Loader, WrongFingerprintIsRefusedBeforeAnyPluginCodeRuns) {
  fs::remove(marker("fixture_wrong_fingerprint"));
  std::string host = kBuildFingerprint;
  std::string theirs = replace(host, "boost108100", "boost107400");
  EXPECT_EQ(load_error(fixture("fixture_wrong_fingerprint")),
            fixture("fixture_wrong_fingerprint") + ": built with " + kCompiler + " for " + theirs + ", but this host is " +
                host + " (differs in: boost); rebuild the plugin against the host's standard library and libraries, with "
                       "the same flags");
  EXPECT_FALSE(fs::exists(marker("fixture_wrong_fingerprint"))) << "the refused plugin's static constructor ran";
}

TEST(Loader, ADebugModePluginIsRefusedBeforeAnyPluginCodeRuns) {
  // -D_GLIBCXX_DEBUG changes the layout of every standard container: loading it crashed the host.
  fs::remove(marker("fixture_glibcxx_debug"));
  std::string host = kBuildFingerprint;
  std::string error = load_error(fixture("fixture_glibcxx_debug"));
  EXPECT_NE(error.find("for " + replace(host, "debug0", "debug1") + ", but this host is " + host), std::string::npos) << error;
  EXPECT_NE(error.find("(differs in: debug mode (_GLIBCXX_DEBUG))"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line";
  EXPECT_FALSE(fs::exists(marker("fixture_glibcxx_debug"))) << "the refused plugin's static constructor ran";
}

// The refusal names what differs in the words docs/sdk.md uses, so that it can be looked up there.
TEST(Loader, AnOldStringAbiPluginIsRefusedInTheDocsWords) {
  fs::remove(marker("fixture_string_abi0"));
  std::string host = kBuildFingerprint;
  std::string error = load_error(fixture("fixture_string_abi0"));
  EXPECT_NE(error.find("for " + replace(host, "-abi1-", "-abi0-") + ", but this host is " + host), std::string::npos) << error;
  const std::string differs = "(differs in: string ABI (_GLIBCXX_USE_CXX11_ABI))";
  EXPECT_NE(error.find(differs), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(marker("fixture_string_abi0"))) << "the refused plugin's static constructor ran";
  std::string doc = test::read_file(SDK_DOC);
  std::replace(doc.begin(), doc.end(), '\n', ' ');  // a phrase may wrap
  for (const char* words : {"string ABI (_GLIBCXX_USE_CXX11_ABI)", "debug mode (_GLIBCXX_DEBUG)",
                            "standard library (libstdcxx is libstdc++, libcxx libc++)"})
    EXPECT_NE(doc.find(words), std::string::npos) << "docs/sdk.md does not say \"" << words << "\" as a refusal does";
}

#ifdef COMPACTOR_TEST_OTHER_COMPILERS
TEST(Loader, ALibcxxPluginIsRefusedAndNamesItsCompiler) {
  fs::remove(marker("fixture_libcxx"));
  std::string error = load_error(fixture("fixture_libcxx"));
  EXPECT_EQ(error.rfind(fixture("fixture_libcxx") + ": built with clang ", 0), 0u) << error;
  EXPECT_NE(error.find(" for libcxx"), std::string::npos) << error;
  EXPECT_NE(error.find("differs in: standard library"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(marker("fixture_libcxx"))) << "the refused plugin's static constructor ran";
}

TEST(Loader, AClangPluginWithTheHostsLibrariesLoadsAndRuns) {
  // Same standard library, same layout: the compiler is named, not matched.
  auto probe = probe_plugin(fixture("fixture_clang"));
  EXPECT_TRUE(probe.loadable) << probe.refusal;
  EXPECT_EQ(probe.compiler.rfind("clang ", 0), 0u) << probe.compiler;
  auto loaded = PluginRegistry::instance().load(fixture("fixture_clang"));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const RegisteredStage* stage = PluginRegistry::instance().find_stage("fixture_clang");
  ASSERT_NE(stage, nullptr);
  expect_pass_through_runs(*stage);
}
#endif

TEST(Loader, NoEntryPoint) {
  EXPECT_EQ(load_error(fixture("fixture_no_entry")),
            fixture("fixture_no_entry") + ": no Compactor plugin entry point (no exported compactor_plugin_api… symbol; build it with compactor_add_stage and COMPACTOR_PLUGIN)");
}

TEST(Loader, NotASharedLibrary) {
  EXPECT_EQ(load_error(fixture("fixture_not_a_library")),
            fixture("fixture_not_a_library") + ": not a shared library (no ELF header)");
}

// Boost.DLL allocated what a corrupt ELF's section headers claim, and an ELF for another machine
// was "No such file or directory". The pre-load check reads the header first, bounded by the
// file's size.
std::string patched_copy(const std::string& name, std::size_t offset, std::uint64_t value, std::size_t width) {
  std::string bytes = test::read_file(fixture("fixture_good"));
  for (std::size_t i = 0; i < width; ++i) bytes[offset + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  std::string path = (fs::temp_directory_path() / ("compactor_stage_" + name + "_" + std::to_string(::getpid()) + ".so")).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(Loader, CorruptSectionHeadersAreRefusedWithoutAllocatingWhatTheyClaim) {
  std::string good = test::read_file(fixture("fixture_good"));
  std::uint64_t shoff = 0;
  for (int i = 7; i >= 0; --i) shoff = (shoff << 8) | static_cast<unsigned char>(good[40 + i]);
  std::string size = std::to_string(good.size());
  // Section 1's sh_size (offset 32 in a 64-byte section header) claims 6 GB.
  std::string huge = patched_copy("huge_section", shoff + 64 + 32, 6'000'000'000ull, 8);
  EXPECT_EQ(load_error(huge), huge + ": corrupt ELF file (section 1 outside its " + size + " bytes)");
  // e_shnum (offset 60) claims 65,535 section headers.
  std::string many = patched_copy("many_sections", 60, 65535, 2);
  EXPECT_EQ(load_error(many), many + ": corrupt ELF file (section headers outside its " + size + " bytes)");
  fs::remove(huge);
  fs::remove(many);
}

TEST(Loader, AnotherArchitectureIsNamed) {
  std::string arm = patched_copy("aarch64", 18, 183, 2);  // e_machine EM_AARCH64
  EXPECT_EQ(load_error(arm), arm + ": built for another architecture (AArch64); this host is x86-64 64-bit");
  fs::remove(arm);
}

// A plugin another user could have planted is refused before its static
// constructor runs, with one line saying why and how to override.
TEST(Loader, APluginOthersCouldHavePlantedIsRefused) {
  fs::path dir = fs::temp_directory_path() / ("compactor-planted-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  std::string file = (dir / "compactor_stage_fixture_good.so").string();
  fs::copy_file(fixture("fixture_good"), file);
  std::string hint = "; fix that, or set COMPACTOR_TRUST_PLUGINS=1 to load it anyway";
  fs::remove(marker("fixture_good"));

  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::group_write |
                            fs::perms::others_read | fs::perms::others_write);  // 0666
  EXPECT_EQ(load_error(file), file + ": refused: it can be written by every user (mode 0666), so anyone could have planted it" + hint);
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir, fs::perms::all);  // 0777, no sticky bit
  EXPECT_EQ(load_error(file), file + ": refused: its folder " + dir.string() +
                                  " can be written by every user (mode 0777), so anyone could have planted it" + hint);
  fs::permissions(dir, fs::perms::owner_all);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
    EXPECT_EQ(load_error(file), file + ": refused: it belongs to another user (uid 65534; this is uid 0), who could have planted it" + hint);
    ::setenv("COMPACTOR_TRUST_PLUGINS", "1", 1);
    EXPECT_TRUE(probe_plugin(file).loadable) << probe_plugin(file).refusal;
    ::unsetenv("COMPACTOR_TRUST_PLUGINS");
  }
  EXPECT_FALSE(fs::exists(marker("fixture_good"))) << "a refused plugin's static constructor ran";
  fs::remove_all(dir);
}

TEST(Loader, ListingPluginsRunsNoPluginCode) {
  fs::remove(marker("fixture_good"));
  auto r = test::run_cli({"plugins", "--plugin-dir", FIXTURE_DIR});
  EXPECT_NE(r.out.find("stage\tfixture_good\t" + fixture("fixture_good") + "\tplugin fixture_good 1.2.3\tAPI 11\t" + std::string(kCompiler) + "\tok\n"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(marker("fixture_good"))) << "compactor plugins ran a plugin's static constructor";
}

TEST(Loader, MissingFile) {
  EXPECT_EQ(load_error(fixture("fixture_nowhere")), fixture("fixture_nowhere") + ": no such plugin file");
}

TEST(Loader, MissingDependencyGivesDlerror) {
  std::string file = fixture("fixture_missing_dependency");
  EXPECT_EQ(load_error(file), file + ": cannot load: " + fs::canonical(file).string() +
                                  ": undefined symbol: compactor_fixture_symbol_that_does_not_exist");
  EXPECT_EQ(PluginRegistry::instance().find_stage("fixture_missing_dependency"), nullptr);
}

TEST(Loader, ThrowingRegistrationIsAnError) {
  std::string file = fixture("fixture_throwing_register");
  EXPECT_EQ(load_error(file), file + ": registering plugin fixture_throwing_register threw: register boom");
  // Asking again gives the same answer; the library stays loaded but registers nothing.
  EXPECT_EQ(load_error(file), file + ": registering plugin fixture_throwing_register threw: register boom");
}

TEST(Loader, ThrowingFactoryIsAnErrorNamingStageAndFile) {
  std::string file = fixture("fixture_throwing_factory");
  ASSERT_TRUE(PluginRegistry::instance().load(file).ok());
  const RegisteredStage* stage = PluginRegistry::instance().find_stage("fixture_throwing_factory");
  ASSERT_NE(stage, nullptr);
  auto instance = create_stage(*stage, {});
  ASSERT_FALSE(instance.ok());
  EXPECT_EQ(instance.error().message,
            "stage fixture_throwing_factory (" + fs::canonical(file).string() + "): create threw: factory boom");
}

TEST(Loader, ThrowingRunIsAnErrorNamingStageAndFile) {
  std::string file = fixture("fixture_throwing_run");
  ASSERT_TRUE(PluginRegistry::instance().load(file).ok());
  const RegisteredStage* stage = PluginRegistry::instance().find_stage("fixture_throwing_run");
  auto instance = create_stage(*stage, {});
  ASSERT_TRUE(instance.ok());
  NullLogger log;
  ArchiveStore archive(unused_archive_dir());
  StageContext context(archive, log);
  Conversation c = small();
  auto result = run_stage(**instance, *stage, c, context);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message, "stage fixture_throwing_run (" + fs::canonical(file).string() + "): run threw: run boom");
}

TEST(Loader, OneStageNameInTwoFilesNamesBoth) {
  std::string a = std::string(FIXTURE_DIR) + "/duplicate_a/compactor_stage_fixture_duplicate.so";
  std::string b = std::string(FIXTURE_DIR) + "/duplicate_b/compactor_stage_fixture_duplicate.so";
  ASSERT_TRUE(PluginRegistry::instance().load(a).ok());
  EXPECT_EQ(load_error(b), "stage \"fixture_duplicate\" is registered by both " + fs::canonical(a).string() + " and " +
                               fs::canonical(b).string());
}

TEST(Discovery, FindsStageFilesInSearchOrder) {
  std::vector<std::string> dirs = {std::string(FIXTURE_DIR) + "/duplicate_b", std::string(FIXTURE_DIR) + "/duplicate_a"};
  EXPECT_EQ(find_stage_file("fixture_duplicate", dirs), dirs[0] + "/compactor_stage_fixture_duplicate.so");
  EXPECT_EQ(find_stage_file("nothing_here", dirs), std::nullopt);
  auto all = list_stage_files(dirs);
  EXPECT_EQ(all, std::vector<std::string>{dirs[0] + "/compactor_stage_fixture_duplicate.so"});
}

TEST(Discovery, AStageInAFileOfSeveralIsFoundByItsNameWithoutLoadingIt) {
  std::vector<std::string> dirs = {std::string(FIXTURE_DIR) + "/two"};
  std::string file = dirs[0] + "/compactor_stage_fixture_two_stages.so";
  PluginProbe probe = probe_plugin(file);
  EXPECT_EQ(probe.provides, (std::vector<std::string>{"stage:fixture_first", "stage:fixture_second"}));
  EXPECT_EQ(find_provider("stage", "fixture_second", dirs), file);
  EXPECT_EQ(find_provider("stage", "fixture_first", dirs), file);
  EXPECT_EQ(find_provider("checker", "fixture_first", dirs), std::nullopt);
  EXPECT_EQ(find_provider("stage", "fixture_third", dirs), std::nullopt);
  ASSERT_TRUE(PluginRegistry::instance().load(file).ok());
  EXPECT_NE(PluginRegistry::instance().find_stage("fixture_second"), nullptr);
  // Listed a line per stage, from the file alone.
  auto r = test::run_cli({"plugins", "--plugin-dir", dirs[0]});
  EXPECT_NE(r.out.find("stage\tfixture_first\t" + file + "\tplugin fixture_two_stages 1.0.0\tAPI "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage\tfixture_second\t" + file + "\tplugin fixture_two_stages 1.0.0\tAPI "), std::string::npos) << r.out;
}

TEST(Loader, APluginRegisteringOtherThanItDeclaresIsRefused) {
  std::string file = std::string(FIXTURE_DIR) + "/undeclared/compactor_stage_fixture_undeclared.so";
  EXPECT_EQ(load_error(file), file + ": plugin fixture_undeclared declares \"stage:fixture_declared\" in COMPACTOR_PLUGIN but "
                                     "registers \"stage:fixture_undeclared\"");
  EXPECT_EQ(PluginRegistry::instance().find_stage("fixture_undeclared"), nullptr);
}

// A file found for `micro` by its name (compactor_stage_micro.so in the config's plugins/) that
// declares only `stage:ctor` is refused from its declaration, before it is loaded: its static
// constructor never runs.
TEST(Loader, AFileThatDeclaresAnotherStageIsRefusedBeforeItIsLoaded) {
  fs::remove(marker("fixture_misdeclared"));
  test::ScratchFolder dir("loader-misdeclared");
  fs::create_directories(dir / "plugins");
  const fs::path planted = dir / "plugins" / "compactor_stage_micro.so";
  fs::copy_file(std::string(FIXTURE_DIR) + "/misdeclared/compactor_stage_fixture_misdeclared.so", planted);
  std::ofstream(dir / "p.yaml") << "version: 1\nbudget: {unit: chars, limit: 1000}\npipeline:\n  - stage: micro\n";
  ConfigLoadResult loaded = load_pipeline_config((dir / "p.yaml").string());
  ASSERT_FALSE(loaded.config.has_value());
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_NE(loaded.errors[0].find(planted.string() + ": plugin fixture_misdeclared declares \"stage:ctor\", not stage:micro; "
                                  "refused before loading it (none of its code ran)"),
            std::string::npos)
      << loaded.errors[0];
  EXPECT_FALSE(fs::exists(marker("fixture_misdeclared"))) << "the refused plugin's static constructor ran";
  EXPECT_EQ(PluginRegistry::instance().find_stage("ctor"), nullptr);
}

// A stage that builds its candidate in a fresh frame (a bare messages array) still cannot drop
// the request body's system, tools or model: the host puts its messages in the committed frame.
class FreshFrameStage final : public Stage {
 public:
  StageResult run(const Conversation& c, const StageContext& context) override {
    std::vector<MessagePtr> messages = c.messages();
    std::string receipt = context.archive.put(std::string(raw_block_field(c[2], 0, "content"))).value();
    messages[2] = with_result_contents(c[2], {{0, boost::json::string("[gone; archived as " + receipt + "]")}}).value();
    return StageResult::candidate(Conversation::from_messages(std::move(messages)));
  }
};

TEST(StageResult, AFreshFrameCannotDropTheRequestBody) {
  Conversation input = testkit::ConversationBuilder()
                           .system("Be brief.")
                           .tool("Read", "reads a file")
                           .user("Summarize the file.")
                           .tool_call("toolu_1", "Read", {{"file_path", "a"}}, std::string(500, 'a'))
                           .assistant("It is all a's.")
                           .build();
  StageInfo info;
  info.name = "fresh_frame";
  info.create = factory_of<FreshFrameStage>();
  testkit::StageRunOptions options;
  options.recent_exchanges = 0;
  testkit::StageRun run = testkit::run_stage_checked(info, input, options);
  ASSERT_EQ(run.status, testkit::Status::committed) << run.reason;
  std::string out = run.serialized();
  EXPECT_EQ(out.rfind("{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":1024,\"system\":\"Be brief.\",\"tools\":[{\"name\":\"Read\"", 0), 0u) << out;
  EXPECT_NE(out.find("[gone; archived as sha256:"), std::string::npos) << out;
}

#ifdef COMPACTOR_TEST_SANITIZED
TEST(Loader, PluginBuiltWithoutTheSanitizerIsRefusedByFingerprint) {
  std::string host = kBuildFingerprint;
  std::string theirs = replace(host, "asan1", "asan0");
  EXPECT_EQ(load_error(fixture("fixture_not_sanitized")),
            fixture("fixture_not_sanitized") + ": built with " + kCompiler + " for " + theirs + ", but this host is " + host +
                " (differs in: asan); rebuild the plugin against the host's standard library and libraries, with the same "
                "flags");
}
#endif

}  // namespace
}  // namespace compactor
