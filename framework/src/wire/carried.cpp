#include "wire/carried.hpp"

#include <boost/json/serialize.hpp>

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace compactor::wire {

namespace json = boost::json;

json::object carried_block(std::string_view of, json::value value, bool reasoning) {
  json::object block{{"type", kCarriedType}, {"of", of}, {"value", std::move(value)}};
  if (reasoning) block["reasoning"] = true;
  return block;
}

bool is_carried(const Block& block) { return block.kind() == BlockKind::other && block.type() == kCarriedType; }

bool carries_reasoning(const Block& block) {
  if (!is_carried(block)) return false;
  const json::value* r = block.field("reasoning");
  return r != nullptr && r->is_bool() && r->get_bool();
}

namespace {

Violation violation(std::size_t message, std::string what) {
  Violation v;
  v.checker = "carried_unchanged";
  v.message_index = message;
  v.what = std::move(what);
  return v;
}

// The messages of `c` by address, for "is this one kept as it was".
std::unordered_set<const Message*> addresses(const Conversation& c) {
  std::unordered_set<const Message*> out;
  out.reserve(c.size() * 2);
  for (const MessagePtr& m : c.messages()) out.insert(m.get());
  return out;
}

class CarriedUnchangedChecker final : public Checker {
 public:
  std::string_view name() const override { return "carried_unchanged"; }

  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    const Conversation& before = in.before;
    const Conversation& c = in.candidate;
    if (&before == &c) return;
    const auto kept = addresses(before);
    // Built only when a replaced message holds carried data: most candidates never need it.
    std::unordered_set<std::string> carried_before;           // carried blocks' JSON
    std::unordered_map<std::string, std::string> members_before;  // a call's or a result's key → its carried member's JSON
    std::unordered_set<std::string> idless_members_before;    // the carried members of blocks without an id (text)
    bool indexed = false;
    auto index = [&] {
      for (const MessagePtr& m : before.messages())
        for (const Block& b : m->blocks()) {
          if (is_carried(b)) carried_before.insert(json::serialize(*b.json()));
          if (const json::value* member = b.field(kCarriedMember)) {
            if (id_of(b).empty()) idless_members_before.insert(json::serialize(*member));
            else members_before[key_of(b)] = json::serialize(*member);
          }
        }
      indexed = true;
    };
    std::unordered_set<std::string> present;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const bool untouched = kept.count(c.messages()[i].get()) > 0;
      for (const Block& b : c[i].blocks()) {
        if (is_carried(b) && carries_reasoning(b)) present.insert(json::serialize(*b.json()));
        if (untouched) continue;
        const json::value* member = b.field(kCarriedMember);
        if (!is_carried(b) && member == nullptr) continue;
        if (!indexed) index();
        if (is_carried(b) && carried_before.count(json::serialize(*b.json())) == 0)
          out.push_back(violation(i, "a carried block was modified or is not from the input"));
        if (member != nullptr && id_of(b).empty()) {
          if (idless_members_before.count(json::serialize(*member)) == 0)
            out.push_back(violation(i, "a " + std::string(b.type()) + " block changed what it carries"));
        } else if (member != nullptr) {
          auto it = members_before.find(key_of(b));
          if (it == members_before.end() || it->second != json::serialize(*member))
            out.push_back(violation(i, std::string(b.type()) + " " + id_of(b) + " changed what it carries"));
        }
      }
    }
    check_open_loop(before, present, out);
  }

 private:
  static std::string id_of(const Block& b) {
    return std::string(b.kind() == BlockKind::tool_result ? b.tool_use_id() : b.id());
  }
  // A call and its result share an id and each carry their own members.
  static std::string key_of(const Block& b) { return std::string(b.type()) + "\n" + id_of(b); }

  // The last assistant turn of an open tool loop (the history ends in its results) keeps its
  // reasoning.
  static void check_open_loop(const Conversation& b, const std::unordered_set<std::string>& present, std::vector<Violation>& out) {
    if (b.size() < 2 || b[b.size() - 1].role() != Role::user || !b[b.size() - 1].has_tool_result()) return;
    std::size_t i = b.size() - 1;
    while (i > 0 && b[i - 1].role() == Role::user) --i;
    while (i > 0 && b[i - 1].role() == Role::assistant) {
      --i;
      for (const Block& block : b[i].blocks())
        if (carries_reasoning(block) && present.count(json::serialize(*block.json())) == 0) {
          Violation v;
          v.checker = "carried_unchanged";
          v.what = "the reasoning carried by input messages." + std::to_string(i) +
                   ", the last assistant turn of an open tool loop, was dropped";
          out.push_back(std::move(v));
        }
    }
  }
};

}  // namespace

CheckerPtr make_carried_unchanged_checker() { return std::make_unique<CarriedUnchangedChecker>(); }

}  // namespace compactor::wire
