// pairing: every tool_use is answered by exactly one tool_result, first in the very next user
// turn; server tools are answered inside their own assistant turn. Consecutive messages of one
// role are one turn (the API joins them), so a result behind a separate text-only user message
// is still late.
#include "checker_support.hpp"

#include <unordered_map>

namespace compactor::detail {
namespace {

struct Turn {
  Role role;
  std::size_t first = 0;  // message indices [first, last]
  std::size_t last = 0;
};

std::vector<Turn> turns_of(const Conversation& c) {
  std::vector<Turn> turns;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!turns.empty() && turns.back().role == c[i].role()) {
      turns.back().last = i;
    } else {
      turns.push_back({c[i].role(), i, i});
    }
  }
  return turns;
}

class PairingChecker final : public Checker {
 public:
  std::string_view name() const override { return "pairing"; }

  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& c = in.candidate;
    std::vector<Turn> turns = turns_of(c);
    for (std::size_t t = 0; t < turns.size(); ++t) {
      if (turns[t].role == Role::assistant) {
        check_assistant_turn(c, turns, t, out);
      } else if (t == 0 || turns[t - 1].role != Role::assistant) {
        // A user turn that follows no assistant turn answers nothing.
        report_unexpected_results(c, turns[t], out);
      }
    }
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c[i].role() != Role::user) continue;
      for (const Block& b : c[i].blocks())
        if (b.kind() == BlockKind::tool_use || b.kind() == BlockKind::server_tool_use) {
          std::string id(b.id());
          out.push_back(violation(name(), i, std::string(b.type()) + " block in a user message (id " + id + ")", {id}));
        }
    }
  }

 private:
  void check_assistant_turn(const Conversation& c, const std::vector<Turn>& turns, std::size_t t,
                            std::vector<Violation>& out) const {
    const Turn& turn = turns[t];
    // Ids in call order with the message that holds each.
    std::vector<std::pair<std::string, std::size_t>> calls;
    std::unordered_map<std::string, std::size_t> server_calls;  // id → message index
    for (std::size_t i = turn.first; i <= turn.last; ++i) {
      for (const Block& b : c[i].blocks()) {
        switch (b.kind()) {
          case BlockKind::tool_use: {
            std::string id = b.has_id() ? std::string(b.id()) : "(no id)";
            if (b.name().empty())
              out.push_back(violation(name(), i, "tool_use " + id + " has no name", {id}));
            const boost::json::value* input = b.input();
            if (input == nullptr || !input->is_object())
              out.push_back(violation(name(), i, "tool_use " + id + " has no input object", {id}));
            calls.emplace_back(std::move(id), i);
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
                                                     " has no server_tool_use before it in the same assistant turn", {id}));
            } else {
              server_calls.erase(it);
            }
            break;
          }
          default: break;
        }
      }
    }
    for (const auto& [id, index] : server_calls)
      out.push_back(violation(name(), index, "server tool use " + id + " has no result in the same assistant turn", {id}));

    if (t + 1 >= turns.size()) {
      if (!calls.empty()) report_missing(calls, out);
      return;
    }
    const Turn& answer = turns[t + 1];
    std::unordered_map<std::string, int> expected;
    for (const auto& call : calls) expected.emplace(call.first, 0);
    bool leading = true;
    for (std::size_t i = answer.first; i <= answer.last; ++i) {
      for (const Block& b : c[i].blocks()) {
        if (b.kind() != BlockKind::tool_result) {
          leading = false;
          continue;
        }
        std::string id(b.tool_use_id());
        auto it = expected.find(id);
        if (it == expected.end()) {
          out.push_back(violation(name(), i, "unexpected tool_use_id found in tool_result blocks: " + id +
                                                 ". Each tool_result block must have a corresponding tool_use block in the previous message", {id}));
        } else if (!leading) {
          out.push_back(violation(name(), i, "tool_result for " + id +
                                                 " comes after a non-tool_result block; tool_result blocks must come first in the message that answers the tool_use", {id}));
          it->second = -1;  // reported as late, not also as missing
        } else if (it->second != 0) {
          out.push_back(violation(name(), i, "more than one tool_result for tool_use id " + id, {id}));
        } else {
          it->second = 1;
        }
      }
    }
    std::vector<std::pair<std::string, std::size_t>> missing;
    for (const auto& call : calls)
      if (expected[call.first] == 0) missing.push_back(call);
    if (!missing.empty()) report_missing(missing, out);
  }

  void report_missing(const std::vector<std::pair<std::string, std::size_t>>& calls, std::vector<Violation>& out) const {
    // One violation per assistant message, in the API's words.
    std::size_t k = 0;
    while (k < calls.size()) {
      std::size_t index = calls[k].second;
      std::vector<std::string> ids;
      while (k < calls.size() && calls[k].second == index) ids.push_back(calls[k++].first);
      out.push_back(violation(name(), index, "tool_use ids were found without tool_result blocks immediately after: " + join(ids), ids));
    }
  }

  void report_unexpected_results(const Conversation& c, const Turn& turn, std::vector<Violation>& out) const {
    for (std::size_t i = turn.first; i <= turn.last; ++i)
      for (const Block& b : c[i].blocks())
        if (b.kind() == BlockKind::tool_result) {
          std::string id(b.tool_use_id());
          out.push_back(violation(name(), i, "unexpected tool_use_id found in tool_result blocks: " + id +
                                                 ". Each tool_result block must have a corresponding tool_use block in the previous message", {id}));
        }
  }
};

}  // namespace

CheckerPtr make_pairing_checker() { return std::make_unique<PairingChecker>(); }

}  // namespace compactor::detail
