// request_kept: each text of the active request survives verbatim, as a message of its own or
// quoted whole in a summary.
#include "checkers/checker_support.hpp"
#include "checkers/checker_host.hpp"

namespace compactor::detail {
namespace {

// Newest first: the request is almost always near the end.
bool contains(const Conversation& c, std::string_view request) {
  const auto& messages = c.messages();
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if ((*it)->role() != Role::user) continue;
    for (const Block& b : (*it)->blocks())
      if (b.kind() == BlockKind::text && b.text().find(request) != std::string_view::npos) return true;
  }
  return false;
}

class RequestKeptChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    if (in.requests.empty() || same_messages(in)) return;
    for (const std::string& request : in.requests) {
      if (request.empty() || contains(in.candidate, request)) continue;
      // A request given from outside that the input itself never held cannot be "dropped".
      if (!contains(in.before, request)) continue;
      std::string excerpt(std::string_view(request).substr(0, 60));
      if (excerpt.size() < request.size()) excerpt += "…";
      Violation v;
      v.checker = std::string(name());
      v.what = "the active request is no longer in the conversation: \"" + excerpt + "\"";
      out.push_back(std::move(v));
    }
  }
};

}  // namespace

std::unique_ptr<Checker> make_request_kept_checker() { return CheckerHost::named(std::make_unique<RequestKeptChecker>(), "request_kept"); }

}  // namespace compactor::detail
