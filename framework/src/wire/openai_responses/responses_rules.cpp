#include "wire/openai_responses/responses_rules.hpp"
#include "checkers/checker_host.hpp"

#include "wire/carried.hpp"

#include <boost/json/serialize.hpp>

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace compactor::wire {
namespace {

namespace json = boost::json;

Violation violation(std::string_view checker, std::size_t message, std::string what) {
  Violation v;
  v.checker = std::string(checker);
  v.message_index = message;
  v.what = std::move(what);
  return v;
}

// The item id a block carries: a call's or output's `carried.id`, a message's fields block's
// `value.id`, a carried item's `value.id`.
std::string_view item_id(const Block& b) {
  const json::value* holder = is_carried(b) ? b.field("value") : b.field(kCarriedMember);
  const json::object* o = holder != nullptr ? holder->if_object() : nullptr;
  const json::value* id = o != nullptr ? o->if_contains("id") : nullptr;
  return id != nullptr && id->is_string() ? std::string_view(id->get_string()) : std::string_view();
}

class UniqueItemIdsChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& c = in.candidate;
    std::unordered_map<std::string_view, std::size_t> seen;
    for (std::size_t i = 0; i < c.size(); ++i)
      for (const Block& b : c[i].blocks()) {
        std::string_view id = item_id(b);
        if (id.empty()) continue;
        auto [it, inserted] = seen.emplace(id, i);
        if (inserted) continue;
        Violation v = violation(name(), i, "item id " + std::string(id) + " is already used at messages." + std::to_string(it->second));
        v.ids = {std::string(id)};
        out.push_back(std::move(v));
      }
  }
};

std::string key_of(const Block& b) { return json::serialize(*b.json()); }

class ReasoningFollowedChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& c = in.candidate;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const auto& blocks = c[i].blocks();
      if (!blocks.empty() && carries_reasoning(blocks.back()))
        out.push_back(violation(name(), i, "a reasoning item ends the turn: the item it belongs to is not after it"));
    }
    if (&in.before == &c) return;
    // In a message a stage edited, each reasoning item keeps the item that followed it.
    std::unordered_set<const Message*> kept;
    for (const MessagePtr& m : in.before.messages()) kept.insert(m.get());
    std::unordered_map<std::string, std::string> follower, reasoning_of;  // reasoning → next; next → reasoning
    bool indexed = false;
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (kept.count(c.messages()[i].get()) > 0) continue;
      if (!indexed) {
        for (const MessagePtr& m : in.before.messages())
          for (std::size_t j = 0; j + 1 < m->blocks().size(); ++j)
            if (carries_reasoning(m->blocks()[j])) {
              follower[key_of(m->blocks()[j])] = key_of(m->blocks()[j + 1]);
              reasoning_of[key_of(m->blocks()[j + 1])] = key_of(m->blocks()[j]);
            }
        indexed = true;
      }
      const auto& blocks = c[i].blocks();
      for (std::size_t j = 0; j < blocks.size(); ++j) {
        const std::string key = key_of(blocks[j]);
        if (auto f = follower.find(key); f != follower.end() && (j + 1 >= blocks.size() || key_of(blocks[j + 1]) != f->second))
          out.push_back(violation(name(), i, "a reasoning item lost the item that followed it"));
        if (auto r = reasoning_of.find(key); r != reasoning_of.end() && (j == 0 || key_of(blocks[j - 1]) != r->second))
          out.push_back(violation(name(), i, "a " + std::string(blocks[j].type()) + " lost the reasoning item before it"));
      }
    }
  }
};

}  // namespace

CheckerPtr make_unique_item_ids_checker() { return CheckerHost::named(std::make_unique<UniqueItemIdsChecker>(), "unique_item_ids"); }
CheckerPtr make_reasoning_followed_checker() { return CheckerHost::named(std::make_unique<ReasoningFollowedChecker>(), "reasoning_followed"); }

}  // namespace compactor::wire
