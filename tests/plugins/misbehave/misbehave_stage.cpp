// TEST ONLY: a stage that archives a blob (so the run has a temporary file) and then takes the
// process down in the way its `mode` says, to prove the host survives it: exit(0), abort,
// a segfault, a stack overflow, or an endless loop; or, `slow`, takes two seconds and changes
// nothing; or, `hold`, changes nothing once the file COMPACTOR_TEST_HOLD_FILE names exists (a
// worker a test can kill from outside mid-request, or keep busy for as long as it needs, without
// guessing how long a stage takes on a loaded machine).
#include "compactor/archive.hpp"
#include "compactor/plugin.hpp"

#include <chrono>
#include <csignal>
#include <thread>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace {

using namespace compactor;

volatile int sink = 0;

// Recurses until the stack runs out (the depth test keeps the compiler from calling it endless).
int recurse(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  if (depth == -1) return frame[0];
  return recurse(depth + 1) + frame[0];  // not a tail call: every frame stays
}

// Until the test creates the release file (a minute at most, so a test that fails before it
// releases leaves no worker behind for long).
void hold_until_released() {
  const char* release = std::getenv("COMPACTOR_TEST_HOLD_FILE");
  for (int i = 0; release != nullptr && i < 12000 && !std::filesystem::exists(release); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

class MisbehaveStage final : public Stage {
 public:
  explicit MisbehaveStage(const ParamValues& p) : mode_(p.string("mode")) {}
  StageResult run(const Conversation& committed, const StageContext& context) override {
    (void)context.archive.put("blob the misbehaving stage archived before it failed");
    if (mode_ == "exit") std::exit(0);
    if (mode_ == "abort") std::abort();
    if (mode_ == "segv") std::raise(SIGSEGV);
    if (mode_ == "overflow") sink = recurse(0);
    if (mode_ == "hang")
      for (;;) sink = sink + 1;
    if (mode_ == "slow" || mode_ == "hold") {
      // When a test names a log, the stage notes when it starts and ends (steady clock, ns).
      const char* log = std::getenv("COMPACTOR_TEST_STAGE_LOG");
      auto note = [&](const char* what) {
        if (log == nullptr) return;
        std::ofstream(log, std::ios::app) << what << ' ' << std::chrono::steady_clock::now().time_since_epoch().count() << '\n';
      };
      note("start");
      if (mode_ == "slow") std::this_thread::sleep_for(std::chrono::seconds(2));
      else hold_until_released();
      note("end");
    }
    return StageResult::candidate(committed);
  }

 private:
  std::string mode_;
};

StageInfo stage_info() {
  StageInfo info;
  info.description = "TEST ONLY: takes the process down";
  info.params = {ParamSpec::choice("mode", "how", "exit", {"exit", "abort", "segv", "overflow", "hang", "slow", "hold", "none"})};
  info.create = factory_of<MisbehaveStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("misbehave", "0.1.0", stage_info)
