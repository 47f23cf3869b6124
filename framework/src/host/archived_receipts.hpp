// What a committed stage archived, for the run report: each receipt it put, with its size and
// what it holds, read from where the stage's output names it (run_report.hpp, ArchivedReceipt).
#pragma once

#include "host/run_report.hpp"

#include "compactor/archive.hpp"
#include "compactor/conversation.hpp"

#include <string>
#include <vector>

namespace compactor {

std::vector<ArchivedReceipt> archived_receipts(const std::vector<std::string>& receipts, const Conversation& before,
                                               const Conversation& after, const Archive& archive);

}  // namespace compactor
