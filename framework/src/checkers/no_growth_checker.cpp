// no_growth: a candidate is not larger than its input, unless its stage declares it may be.
#include "checkers/checker_support.hpp"
#include "checkers/checker_host.hpp"

namespace compactor::detail {
namespace {

class NoGrowthChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    if (in.may_grow || same_messages(in)) return;
    SizeUnit unit = in.unit;
    std::uint64_t was = in.before.size_in(unit), now = in.candidate.size_in(unit);
    if (now <= was) return;
    Violation v;
    v.checker = std::string(name());
    v.what = "the candidate is larger than its input: " + std::to_string(now) + " > " + std::to_string(was) + " " +
             std::string(to_string(unit));
    out.push_back(std::move(v));
  }
};

}  // namespace

std::unique_ptr<Checker> make_no_growth_checker() { return CheckerHost::named(std::make_unique<NoGrowthChecker>(), "no_growth"); }

}  // namespace compactor::detail
