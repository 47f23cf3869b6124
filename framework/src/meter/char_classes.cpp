#include "meter/char_classes.hpp"

#include <cstring>
#include <iterator>
#include <memory>

namespace compactor::detail {
namespace {

struct ClassRun {
  std::uint32_t first;  // the run's first code point; it ends where the next begins
  std::uint8_t classes;
};

constexpr ClassRun kRuns[] = {
#include "meter/char_class_runs.inc"
};

}  // namespace

const std::uint8_t* char_class_table() {
  static const std::unique_ptr<std::uint8_t[]> table = [] {
    auto t = std::make_unique<std::uint8_t[]>(0x110000);
    for (std::size_t i = 0; i < std::size(kRuns); ++i) {
      std::uint32_t end = i + 1 < std::size(kRuns) ? kRuns[i + 1].first : 0x110000;
      std::memset(t.get() + kRuns[i].first, kRuns[i].classes, end - kRuns[i].first);
    }
    return t;
  }();
  return table.get();
}

}  // namespace compactor::detail
