#include "wire/carried.hpp"
#include "checkers/checker_host.hpp"

#include <boost/json/serialize.hpp>

#include <optional>
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

CheckerPtr make_carried_unchanged_checker() { return CheckerHost::named(std::make_unique<CarriedUnchangedChecker>(), "carried_unchanged"); }

namespace {

// What a carried block held, named for the line that says it was left out.
std::string carried_kind(const json::object& block) {
  const json::value* of = block.if_contains("of");
  const json::value* value = block.if_contains("value");
  std::string what = "carried " + std::string(of != nullptr && of->is_string() ? std::string_view(of->get_string()) : "data");
  const json::object* o = value != nullptr ? value->if_object() : nullptr;
  if (const json::value* type = o != nullptr ? o->if_contains("type") : nullptr; type != nullptr && type->is_string())
    what += " " + std::string(type->get_string());
  return what;
}

// `message` without carried blocks and members, or nothing when it has none.
std::optional<json::object> stripped(const Message& message, std::map<std::string, std::size_t>& left_out) {
  bool any = false;
  for (const Block& b : message.blocks()) any = any || is_carried(b) || b.field(kCarriedMember) != nullptr;
  if (!any) return std::nullopt;
  json::object out = message.json();
  json::array kept;
  for (json::value& block : out["content"].as_array()) {
    json::object& o = block.as_object();
    const json::value* type = o.if_contains("type");
    const std::string_view block_type = type != nullptr && type->is_string() ? std::string_view(type->get_string()) : "";
    if (block_type == kCarriedType) {
      if (const json::value* value = o.if_contains("value"); o.at("of") == "fields" && value != nullptr && value->is_object())
        for (const auto& kv : value->get_object()) ++left_out["message member " + std::string(kv.key())];
      else
        ++left_out[carried_kind(o)];
      continue;
    }
    if (const json::value* members = o.if_contains(kCarriedMember); members != nullptr) {
      if (members->is_object())
        for (const auto& kv : members->get_object()) ++left_out[std::string(block_type) + " member " + std::string(kv.key())];
      o.erase(kCarriedMember);
    }
    kept.push_back(std::move(block));
  }
  out["content"] = std::move(kept);
  return out;
}

}  // namespace

std::string without_carried(const Conversation& conversation, std::map<std::string, std::size_t>& left_out) {
  std::vector<MessagePtr> messages;
  bool changed = false;
  for (const MessagePtr& m : conversation.messages()) {
    auto object = stripped(*m, left_out);
    auto built = object ? Message::from_json(std::move(*object)) : Expected<MessagePtr>(m);
    messages.push_back(built ? *built : m);
    changed = changed || object;
  }
  return changed ? conversation.with_messages(std::move(messages)).serialize() : conversation.serialize();
}

}  // namespace compactor::wire
