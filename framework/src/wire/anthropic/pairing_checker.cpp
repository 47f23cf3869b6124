// pairing: every tool_use of an assistant message is answered by exactly one tool_result, first
// in the very next message; server tools are answered inside their own assistant message. The
// rule is read per message, as the API reads it: results split over two user messages, or calls
// split over two assistant messages before one results message, are refused even though the API
// joins consecutive same-role messages for ordinary content.
#include "wire/anthropic/messages_rules.hpp"

#include "checkers/checker_support.hpp"
#include "checkers/checker_host.hpp"

#include <unordered_map>

namespace compactor::detail {
namespace {

constexpr std::string_view kUnexpected =
    ". Each tool_result block must have a corresponding tool_use block in the previous message";

class PairingChecker final : public Checker {
 public:

  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& c = in.candidate;
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c[i].role() == Role::assistant) {
        check_assistant(c, i, out);
      } else {
        check_user_blocks(c, i, out);
        // A user message right after an assistant message is checked as that message's answer.
        if (i == 0 || c[i - 1].role() != Role::assistant) report_unexpected_results(c, i, out);
      }
    }
  }

 private:
  void check_user_blocks(const Conversation& c, std::size_t i, std::vector<Violation>& out) const {
    for (const Block& b : c[i].blocks())
      if (b.kind() == BlockKind::tool_use || b.kind() == BlockKind::server_tool_use) {
        std::string id(b.id());
        out.push_back(violation(name(), i, std::string(b.type()) + " block in a user message (id " + id + ")", {id}));
      }
  }

  void check_assistant(const Conversation& c, std::size_t i, std::vector<Violation>& out) const {
    std::vector<std::string> calls;  // in call order
    std::unordered_map<std::string, std::size_t> server_calls;
    for (const Block& b : c[i].blocks()) {
      switch (b.kind()) {
        case BlockKind::tool_use: {
          std::string id = b.has_id() ? std::string(b.id()) : "(no id)";
          if (b.name().empty()) out.push_back(violation(name(), i, "tool_use " + id + " has no name", {id}));
          const boost::json::value* input = b.input();
          if (input == nullptr || !input->is_object())
            out.push_back(violation(name(), i, "tool_use " + id + " has no input object", {id}));
          calls.push_back(std::move(id));
          break;
        }
        case BlockKind::tool_result: {
          std::string id(b.tool_use_id());
          out.push_back(violation(name(), i, "tool_result block in an assistant message (tool_use_id " + id + ")", {id}));
          break;
        }
        case BlockKind::server_tool_use:
          server_calls.emplace(std::string(b.id()), i);
          break;
        case BlockKind::server_tool_result: {
          auto it = server_calls.find(std::string(b.tool_use_id()));
          if (it == server_calls.end()) {
            std::string id(b.tool_use_id());
            out.push_back(violation(name(), i, std::string(b.type()) + " for " + id +
                                                   " has no server_tool_use before it in the same assistant message", {id}));
          } else {
            server_calls.erase(it);
          }
          break;
        }
        default: break;
      }
    }
    for (const auto& [id, index] : server_calls)
      out.push_back(violation(name(), index, "server tool use " + id + " has no result in the same assistant message", {id}));

    // The very next message answers; an assistant message there answers nothing.
    std::unordered_map<std::string, int> expected;
    for (const auto& id : calls) expected.emplace(id, 0);
    std::size_t next = i + 1;
    if (next < c.size() && c[next].role() == Role::user) {
      bool leading = true;
      for (const Block& b : c[next].blocks()) {
        if (b.kind() != BlockKind::tool_result) {
          leading = false;
          continue;
        }
        std::string id(b.tool_use_id());
        auto it = expected.find(id);
        if (it == expected.end()) {
          out.push_back(violation(name(), next, "unexpected tool_use_id found in tool_result blocks: " + id + std::string(kUnexpected), {id}));
        } else if (!leading) {
          out.push_back(violation(name(), next, "tool_result for " + id +
                                                    " comes after a non-tool_result block; tool_result blocks must come first in the message that answers the tool_use", {id}));
          it->second = -1;  // reported as late, not also as missing
        } else if (it->second != 0) {
          out.push_back(violation(name(), next, "more than one tool_result for tool_use id " + id, {id}));
        } else {
          it->second = 1;
        }
      }
    }
    std::vector<std::string> missing;
    for (const auto& id : calls)
      if (expected[id] == 0) missing.push_back(id);
    if (!missing.empty())
      out.push_back(violation(name(), i, "tool_use ids were found without tool_result blocks immediately after: " + join(missing), missing));
  }

  void report_unexpected_results(const Conversation& c, std::size_t i, std::vector<Violation>& out) const {
    for (const Block& b : c[i].blocks())
      if (b.kind() == BlockKind::tool_result) {
        std::string id(b.tool_use_id());
        out.push_back(violation(name(), i, "unexpected tool_use_id found in tool_result blocks: " + id + std::string(kUnexpected), {id}));
      }
  }
};

}  // namespace

std::unique_ptr<Checker> make_pairing_checker() { return CheckerHost::named(std::make_unique<PairingChecker>(), "pairing"); }

}  // namespace compactor::detail
