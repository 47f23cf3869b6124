// The host running every ready pipeline (normal and prompt_too_long) on fuzzed conversations:
// never a crash; a run that commits gives an output the API accepts (structure, pairing, unique
// ids, with the request kept), and every receipt the output names restores from the archive.
#include "archive/archive_store.hpp"
#include "loader/builtin_checkers.hpp"
#include "model/conversation_reader.hpp"
#include "host/pipeline.hpp"
#include "compactor/protected_tail.hpp"
#include "fuzz_check.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <regex>
#include <vector>

namespace {

namespace fs = std::filesystem;

class QuietLogger final : public compactor::StageLogger {
 public:
  void log(compactor::LogLevel, std::string_view) override {}
};

struct Ready {
  std::vector<std::unique_ptr<compactor::Pipeline>> pipelines;
  std::string archive;
};

const std::string& archive_dir() {
  static const FuzzScratch scratch("fuzz-archive");
  return scratch.path();
}

// Every configs/*.yaml but the price table, loaded once.
Ready& ready() {
  static Ready r = [] {
    Ready out;
    out.archive = archive_dir();
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(COMPACTOR_CONFIGS_DIR))
      if (e.path().extension() == ".yaml" && e.path().filename() != "prices.yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      auto loaded = compactor::load_pipeline_config(f.string());
      FUZZ_CHECK(loaded.config.has_value(), f.string() + ": " + (loaded.errors.empty() ? "" : loaded.errors.front()));
      auto built = compactor::Pipeline::build(std::move(*loaded.config));
      FUZZ_CHECK(built.ok(), f.string());
      out.pipelines.push_back(std::make_unique<compactor::Pipeline>(std::move(built).value()));
    }
    return out;
  }();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto conversation = compactor::read_conversation(std::string(reinterpret_cast<const char*>(data), size));
  if (!conversation) return 0;
  Ready& r = ready();
  QuietLogger log;
  std::vector<compactor::CheckerPtr> checkers;
  for (const char* name : {"structure", "pairing", "unique_ids"}) checkers.push_back(compactor::make_builtin_checker(name));
  static const std::regex receipt_pattern("sha256:[0-9a-f]{64}");
  for (const auto& pipeline : r.pipelines) {
    for (bool reactive : {false, true}) {
      compactor::RunOptions options;
      options.prompt_too_long = reactive;
      options.archive_dir = r.archive;
      compactor::RunReport report = pipeline->run(*conversation, options, log);
      FUZZ_CHECK(report.status != compactor::RunStatus::failed, "the run failed: " + report.error);
      if (!report.output) continue;
      const compactor::Conversation& out = *report.output;
      auto violations = compactor::run_checkers(checkers, compactor::CheckInput{out, out, compactor::compute_protected_tail(out, 0), {}});
      FUZZ_CHECK(violations.empty(), pipeline->config().file + ": the output breaks a rule: " + violations.front().to_string());
      std::string text = out.serialize();
      for (std::sregex_iterator it(text.begin(), text.end(), receipt_pattern), end; it != end; ++it) {
        auto restored = compactor::restore_blob(r.archive, it->str());
        FUZZ_CHECK(restored.ok(), pipeline->config().file + ": " + it->str() + " does not restore: " + restored.error().message);
      }
    }
  }
  return 0;
}
