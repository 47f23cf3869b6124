// structure: what the API requires of the message sequence itself.
#include "checkers/checker_support.hpp"

namespace compactor::detail {
namespace {

class StructureChecker final : public Checker {
 public:
  std::string_view name() const override { return "structure"; }
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& c = in.candidate;
    if (c.empty()) {
      Violation v;
      v.checker = "structure";
      v.what = "the conversation has no messages";
      out.push_back(std::move(v));
      return;
    }
    if (c[0].role() != Role::user)
      out.push_back(violation(name(), 0, "the first message must have role \"user\", got \"assistant\""));
    for (std::size_t i = 0; i < c.size(); ++i) {
      const Message& m = c[i];
      bool empty = m.content_is_string() ? m.blocks().front().text().empty() : m.blocks().empty();
      bool final_assistant = i + 1 == c.size() && m.role() == Role::assistant;
      if (empty && !final_assistant)
        out.push_back(violation(name(), i, "all messages must have non-empty content except for the optional final assistant message"));
    }
  }
};

}  // namespace

CheckerPtr make_structure_checker() { return std::make_unique<StructureChecker>(); }

}  // namespace compactor::detail
