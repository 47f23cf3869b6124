#include "wire/gemini/gemini_rules.hpp"
#include "checkers/checker_host.hpp"

#include "wire/carried.hpp"

#include <boost/json/serialize.hpp>

#include <string>
#include <unordered_map>
#include <vector>

namespace compactor::wire {

namespace json = boost::json;

const json::value* thought_signature_of(const Block& call) {
  const json::value* carried = call.field(kCarriedMember);
  if (carried == nullptr || !carried->is_object()) return nullptr;
  const json::object& o = carried->get_object();
  if (const json::value* s = o.if_contains("thoughtSignature")) return s;
  return o.if_contains("thought_signature");
}

namespace {

Violation violation(std::string_view checker, std::size_t message, std::string what, std::vector<std::string> ids = {}) {
  Violation v;
  v.checker = std::string(checker);
  v.message_index = message;
  v.what = std::move(what);
  v.ids = std::move(ids);
  return v;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::vector<const Block*> calls_of(const Message& m) {
  std::vector<const Block*> out;
  for (const Block& b : m.blocks())
    if (b.kind() == BlockKind::tool_use) out.push_back(&b);
  return out;
}

// A turn that is not only function responses (text, an image, a summary): where the API's
// "current turn" starts when it is a user turn.
bool has_standard_content(const Message& m) {
  for (const Block& b : m.blocks())
    if (b.kind() != BlockKind::tool_result && !(is_carried(b) && b.string_field("of") == "fields")) return true;
  return false;
}

// The first message of the current turn: just after the last user turn with standard content.
std::size_t current_turn_start(const Conversation& c) {
  for (std::size_t i = c.size(); i-- > 0;)
    if (c[i].role() == Role::user && has_standard_content(c[i])) return i + 1;
  return 0;
}

class GeminiTurnsChecker final : public Checker {
 public:

  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& c = in.candidate;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const Message& m = c[i];
      const bool no_parts = m.content_is_string() ? false : m.blocks().empty();
      if (no_parts) out.push_back(violation(name(), i, "a Content must have at least one Part"));
      bool calls = false;
      for (const Block& b : m.blocks()) {
        if (b.kind() == BlockKind::tool_use && m.role() == Role::user)
          out.push_back(violation(name(), i, "a functionCall part (" + std::string(b.name()) + ") in a user turn", {std::string(b.id())}));
        if (b.kind() == BlockKind::tool_result && m.role() == Role::assistant)
          out.push_back(violation(name(), i, "a functionResponse part in a model turn", {std::string(b.tool_use_id())}));
        calls |= b.kind() == BlockKind::tool_use;
      }
      if (calls && m.role() == Role::assistant && (i == 0 || c[i - 1].role() != Role::user))
        out.push_back(violation(name(), i, "a function call turn must come immediately after a user turn or after a function response turn"));
    }
  }
};

class GeminiFunctionResponsesChecker final : public Checker {
 public:

  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& c = in.candidate;
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c[i].role() == Role::assistant) {
        check_calls(c, i, out);
        continue;
      }
      // Responses that the turn before does not call for.
      std::unordered_map<std::string, int> called;
      if (i > 0 && c[i - 1].role() == Role::assistant)
        for (const Block* b : calls_of(c[i - 1])) called.emplace(std::string(b->id()), 0);
      for (const Block& b : c[i].blocks()) {
        if (b.kind() != BlockKind::tool_result) continue;
        std::string id(b.tool_use_id());
        auto it = called.find(id);
        if (it == called.end())
          out.push_back(violation(name(), i, "a functionResponse part that answers no functionCall of the model turn right before it (" + id + ")", {id}));
        else if (++it->second == 2)
          out.push_back(violation(name(), i, "two functionResponse parts answer functionCall " + id, {id}));
      }
    }
  }

 private:
  void check_calls(const Conversation& c, std::size_t i, std::vector<Violation>& out) const {
    const std::vector<const Block*> calls = calls_of(c[i]);
    if (calls.empty()) return;
    if (i + 1 == c.size()) {
      out.push_back(violation(name(), i, "the history ends with a function call turn: its calls have no responses"));
      return;
    }
    std::unordered_map<std::string, int> answered;
    std::size_t responses = 0;
    if (c[i + 1].role() == Role::user)
      for (const Block& b : c[i + 1].blocks())
        if (b.kind() == BlockKind::tool_result) {
          ++answered[std::string(b.tool_use_id())];
          ++responses;
        }
    // A user turn with no function response at all leaves the calls unanswered: the client
    // abandoned them (Gemini CLI does, to tell the model it may be looping), which the API's
    // rule, about the function response turn, does not concern.
    if (responses == 0 && c[i + 1].role() == Role::user && has_standard_content(c[i + 1])) return;
    std::vector<std::string> missing;
    for (const Block* b : calls)
      if (answered[std::string(b->id())] == 0) missing.push_back(std::string(b->id()));
    if (missing.empty() && responses == calls.size()) return;
    out.push_back(violation(name(), i,
                            "the model turn has " + std::to_string(calls.size()) + " functionCall part" + (calls.size() == 1 ? "" : "s") +
                                " and the next turn " + std::to_string(responses) + " functionResponse part" + (responses == 1 ? "" : "s") +
                                (missing.empty() ? std::string() : "; no response for " + joined(missing)) +
                                " (the number of function response parts must equal the number of function call parts of the function call turn)",
                            missing));
  }
};

class GeminiThoughtSignaturesChecker final : public Checker {
 public:

  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& before = in.before;
    const Conversation& c = in.candidate;
    // What the input gave each call (only when the candidate is not the input itself).
    if (&before != &c) {
      std::unordered_map<std::string, std::string> given;
      for (const MessagePtr& m : before.messages())
        for (const Block* b : calls_of(*m))
          if (const json::value* s = thought_signature_of(*b)) given.emplace(std::string(b->id()), json::serialize(*s));
      for (std::size_t i = 0; i < c.size(); ++i)
        for (const Block* b : calls_of(c[i])) {
          auto it = given.find(std::string(b->id()));
          if (it == given.end()) continue;
          const json::value* now = thought_signature_of(*b);
          if (now == nullptr)
            out.push_back(violation(name(), i, "functionCall " + std::string(b->id()) + " (" + std::string(b->name()) + ") lost its thoughtSignature", {std::string(b->id())}));
          else if (json::serialize(*now) != it->second)
            out.push_back(violation(name(), i, "functionCall " + std::string(b->id()) + " (" + std::string(b->name()) + ") has a changed thoughtSignature", {std::string(b->id())}));
        }
    }
    // The current turn: when the model signs its steps, the first call of every step is signed.
    const std::size_t start = current_turn_start(c);
    bool signs = false;
    for (std::size_t i = start; i < c.size() && !signs; ++i)
      for (const Block* b : calls_of(c[i])) signs |= thought_signature_of(*b) != nullptr;
    if (!signs) return;
    for (std::size_t i = start; i < c.size(); ++i) {
      const std::vector<const Block*> calls = calls_of(c[i]);
      if (c[i].role() != Role::assistant || calls.empty() || thought_signature_of(*calls.front()) != nullptr) continue;
      out.push_back(violation(name(), i, "the first functionCall part of a step of the current turn (" + std::string(calls.front()->name()) +
                                             ") is missing its thought_signature, which the API requires",
                              {std::string(calls.front()->id())}));
    }
  }
};

}  // namespace

CheckerPtr make_gemini_turns_checker() { return CheckerHost::named(std::make_unique<GeminiTurnsChecker>(), "gemini_turns"); }
CheckerPtr make_gemini_function_responses_checker() { return CheckerHost::named(std::make_unique<GeminiFunctionResponsesChecker>(), "gemini_function_responses"); }
CheckerPtr make_gemini_thought_signatures_checker() { return CheckerHost::named(std::make_unique<GeminiThoughtSignaturesChecker>(), "gemini_thought_signatures"); }

}  // namespace compactor::wire
