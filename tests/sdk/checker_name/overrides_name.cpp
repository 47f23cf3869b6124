// A plugin checker that tries to name itself: with OVERRIDE it says `override`, which must not
// compile (Checker::name() is not virtual: a checker's name is the one it was registered under);
// without, it declares a name() of its own, which compiles and the host never calls.
#include "compactor/checker.hpp"

class Renamed final : public compactor::Checker {
 public:
#ifdef OVERRIDE
  std::string_view name() const override { return "another_rule"; }
#else
  std::string_view own_name() const { return "another_rule"; }
#endif
  void check(const compactor::CheckInput&, std::vector<compactor::Violation>&) const override {}
};

int main() {
  Renamed r;
  return r.name().empty() ? 0 : 1;
}
