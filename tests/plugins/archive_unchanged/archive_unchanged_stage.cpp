// archive_unchanged: a test-only stage that archives a piece of the conversation and then returns
// it unchanged, so tests can show that an unchanged stage's blobs are dropped like a decline's.
#include "compactor/archive.hpp"
#include "compactor/plugin.hpp"

namespace {

using namespace compactor;

class ArchiveUnchangedStage final : public Stage {
 public:
  StageResult run(const Conversation& committed, const StageContext& context) override {
    (void)context.archive.put(std::string(committed[0].raw()));
    return StageResult::candidate(committed);
  }
};

StageInfo stage_info() {
  StageInfo info;
  info.description = "TEST ONLY: archives the first message, then changes nothing";
  info.create = factory_of<ArchiveUnchangedStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("archive_unchanged", "0.1.0", stage_info)
