// Seeded single mutations of valid conversations (real sessions from tests/data and generated
// ones): each mutation breaks one rule, and the checker named for that rule must catch it. A
// control run rebuilds every message from its JSON and must find nothing.
#include "support/test_support.hpp"

#include "model/active_request.hpp"
#include "loader/builtin_checkers.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <random>

namespace compactor {
namespace {

namespace json = boost::json;
using Rng = std::mt19937_64;

// ---- generated conversations ------------------------------------------------------------------

Conversation generate(std::uint64_t seed) {
  Rng rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  json::array messages;
  messages.push_back(json::object{{"role", "user"}, {"content", "task " + std::to_string(seed) + ": fix the failing tests"}});
  int exchanges = pick(3, 12), id = 0;
  for (int e = 0; e < exchanges; ++e) {
    json::array content;
    if (pick(0, 2) == 0)
      content.push_back(json::object{{"type", "thinking"}, {"thinking", "think " + std::to_string(e)},
                                     {"signature", "sig" + std::to_string(seed) + "_" + std::to_string(e)}});
    if (pick(0, 1) == 0) content.push_back(json::object{{"type", "text"}, {"text", "step " + std::to_string(e)}});
    bool tools = e + 1 == exchanges || pick(0, 4) != 0;
    std::vector<std::string> ids;
    if (tools) {
      for (int k = pick(1, 3); k > 0; --k) {
        ids.push_back("toolu_" + std::to_string(seed) + "_" + std::to_string(id++));
        content.push_back(json::object{{"type", "tool_use"}, {"id", ids.back()}, {"name", pick(0, 1) ? "Read" : "Bash"},
                                       {"input", json::object{{"path", "f" + std::to_string(id) + ".txt"}}}});
      }
    } else if (content.empty()) {
      content.push_back(json::object{{"type", "text"}, {"text", "answer " + std::to_string(e)}});
    }
    messages.push_back(json::object{{"role", "assistant"}, {"content", content}});
    json::array answer;
    for (const auto& tid : ids) {
      json::object r{{"type", "tool_result"}, {"tool_use_id", tid}, {"content", std::string(pick(1, 400), 'x')}};
      if (pick(0, 5) == 0) r["is_error"] = true;
      answer.push_back(r);
    }
    if (ids.empty() || pick(0, 4) == 0) answer.push_back(json::object{{"type", "text"}, {"text", "follow-up " + std::to_string(e)}});
    messages.push_back(json::object{{"role", "user"}, {"content", answer}});
  }
  return test::parse_or_die(json::serialize(messages));
}

// ---- mutations ------------------------------------------------------------------------------

struct Subject {
  Conversation conversation;
  std::string request;
};

struct Mutation {
  std::string name;
  std::string checker;  // the checker named for the rule it breaks
  std::size_t exchanges = 0;
  std::function<std::optional<Conversation>(const Subject&, Rng&, std::size_t& exchanges)> apply;
};

struct Where {
  std::size_t message;
  std::size_t block;
};

std::vector<Where> find_blocks(const Conversation& c, BlockKind kind, std::size_t end) {
  std::vector<Where> out;
  for (std::size_t i = 0; i < end && i < c.size(); ++i) {
    if (c[i].content_is_string()) continue;
    for (std::size_t b = 0; b < c[i].blocks().size(); ++b)
      if (c[i].blocks()[b].kind() == kind) out.push_back({i, b});
  }
  return out;
}

template <class T>
const T& choose(const std::vector<T>& items, Rng& rng) {
  return items[std::uniform_int_distribution<std::size_t>(0, items.size() - 1)(rng)];
}

// Copies message `i` as JSON, lets `edit` change it, and returns the conversation with it replaced.
Conversation replace(const Conversation& c, std::size_t i, const std::function<void(json::object&)>& edit) {
  json::object o = c[i].json();
  edit(o);
  auto messages = c.messages();
  messages[i] = test::message_or_die(std::move(o));
  return c.with_messages(std::move(messages));
}

json::object& block_at(json::object& message, std::size_t b) { return message["content"].as_array()[b].as_object(); }

// Splits message `i` in two messages of its role: the blocks up to its first tool_use or
// tool_result, and the rest.
Conversation split_after_first(const Conversation& c, std::size_t i) {
  json::array all = c[i].json().at("content").as_array();
  std::size_t cut = 0;
  while (cut < all.size() && all[cut].as_object().at("type") != "tool_use" && all[cut].as_object().at("type") != "tool_result") ++cut;
  json::array head(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(cut + 1));
  json::array rest(all.begin() + static_cast<std::ptrdiff_t>(cut + 1), all.end());
  std::string role(to_string(c[i].role()));
  auto messages = c.messages();
  messages[i] = test::message_or_die(json::object{{"role", role}, {"content", head}});
  messages.insert(messages.begin() + static_cast<std::ptrdiff_t>(i + 1), test::message_or_die(json::object{{"role", role}, {"content", rest}}));
  return c.with_messages(std::move(messages));
}

std::vector<Mutation> mutations() {
  std::vector<Mutation> m;
  m.push_back({"drop a result", "pairing", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto results = find_blocks(s.conversation, BlockKind::tool_result, s.conversation.size());
    if (results.empty()) return std::nullopt;
    Where w = choose(results, rng);
    return replace(s.conversation, w.message, [&](json::object& o) {
      auto& a = o["content"].as_array();
      a.erase(a.begin() + static_cast<std::ptrdiff_t>(w.block));
      if (a.empty()) a.push_back(json::object{{"type", "text"}, {"text", "(nothing)"}});
    });
  }});
  m.push_back({"swap result ids across messages", "pairing", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto results = find_blocks(s.conversation, BlockKind::tool_result, s.conversation.size());
    if (results.size() < 2) return std::nullopt;
    Where a = choose(results, rng), b = choose(results, rng);
    if (a.message == b.message) return std::nullopt;
    std::string ida(s.conversation[a.message].blocks()[a.block].tool_use_id());
    std::string idb(s.conversation[b.message].blocks()[b.block].tool_use_id());
    auto c = replace(s.conversation, a.message, [&](json::object& o) { block_at(o, a.block)["tool_use_id"] = idb; });
    return replace(c, b.message, [&](json::object& o) { block_at(o, b.block)["tool_use_id"] = ida; });
  }});
  m.push_back({"move a result after text", "pairing", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto results = find_blocks(s.conversation, BlockKind::tool_result, s.conversation.size());
    if (results.empty()) return std::nullopt;
    Where w = choose(results, rng);
    return replace(s.conversation, w.message, [&](json::object& o) {
      auto& a = o["content"].as_array();
      a.insert(a.begin(), json::object{{"type", "text"}, {"text", "note"}});
    });
  }});
  m.push_back({"drop a tool_use", "pairing", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto uses = find_blocks(s.conversation, BlockKind::tool_use, s.conversation.size());
    if (uses.empty()) return std::nullopt;
    Where w = choose(uses, rng);
    return replace(s.conversation, w.message, [&](json::object& o) {
      auto& a = o["content"].as_array();
      a.erase(a.begin() + static_cast<std::ptrdiff_t>(w.block));
      if (a.empty()) a.push_back(json::object{{"type", "text"}, {"text", "(nothing)"}});
    });
  }});
  m.push_back({"put a tool_result in an assistant message", "pairing", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto uses = find_blocks(s.conversation, BlockKind::tool_use, s.conversation.size());
    if (uses.empty()) return std::nullopt;
    Where w = choose(uses, rng);
    return replace(s.conversation, w.message, [&](json::object& o) {
      o["content"].as_array().push_back(json::object{{"type", "tool_result"}, {"tool_use_id", "toolu_stray"}, {"content", "x"}});
    });
  }});
  // The API reads pairing per message: a batch split over two messages is refused.
  m.push_back({"split a result batch over two user messages", "pairing", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    std::vector<std::size_t> batches;
    for (std::size_t i = 0; i < s.conversation.size(); ++i)
      if (s.conversation[i].role() == Role::user && find_blocks(s.conversation, BlockKind::tool_result, i + 1).size() -
                                                          find_blocks(s.conversation, BlockKind::tool_result, i).size() >= 2)
        batches.push_back(i);
    if (batches.empty()) return std::nullopt;
    return split_after_first(s.conversation, choose(batches, rng));
  }});
  m.push_back({"split a call batch over two assistant messages", "pairing", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    std::vector<std::size_t> batches;
    for (std::size_t i = 0; i < s.conversation.size(); ++i)
      if (s.conversation[i].role() == Role::assistant && find_blocks(s.conversation, BlockKind::tool_use, i + 1).size() -
                                                               find_blocks(s.conversation, BlockKind::tool_use, i).size() >= 2)
        batches.push_back(i);
    if (batches.empty()) return std::nullopt;
    return split_after_first(s.conversation, choose(batches, rng));
  }});
  m.push_back({"edit a thinking block", "thinking_unchanged", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto thinking = find_blocks(s.conversation, BlockKind::thinking, s.conversation.size());
    if (thinking.empty()) return std::nullopt;
    Where w = choose(thinking, rng);
    return replace(s.conversation, w.message, [&](json::object& o) {
      auto& b = block_at(o, w.block);
      b["thinking"] = std::string(b["thinking"].as_string()) + " (edited)";
    });
  }});
  m.push_back({"change a tool input", "pairs_unchanged", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto uses = find_blocks(s.conversation, BlockKind::tool_use, s.conversation.size());
    if (uses.empty()) return std::nullopt;
    Where w = choose(uses, rng);
    return replace(s.conversation, w.message, [&](json::object& o) {
      auto& b = block_at(o, w.block);
      if (!b["input"].is_object()) b["input"] = json::object{};
      b["input"].as_object()["mutated"] = 1;
    });
  }});
  m.push_back({"rename a tool", "pairs_unchanged", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto uses = find_blocks(s.conversation, BlockKind::tool_use, s.conversation.size());
    if (uses.empty()) return std::nullopt;
    Where w = choose(uses, rng);
    return replace(s.conversation, w.message, [&](json::object& o) { block_at(o, w.block)["name"] = "Renamed"; });
  }});
  m.push_back({"flip is_error", "pairs_unchanged", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto results = find_blocks(s.conversation, BlockKind::tool_result, s.conversation.size());
    if (results.empty()) return std::nullopt;
    Where w = choose(results, rng);
    bool was = s.conversation[w.message].blocks()[w.block].is_error();
    return replace(s.conversation, w.message, [&](json::object& o) { block_at(o, w.block)["is_error"] = !was; });
  }});
  m.push_back({"duplicate a tool_use id", "unique_ids", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto uses = find_blocks(s.conversation, BlockKind::tool_use, s.conversation.size());
    if (uses.size() < 2) return std::nullopt;
    Where a = choose(uses, rng), b = choose(uses, rng);
    if (a.message >= b.message) return std::nullopt;
    std::string ida(s.conversation[a.message].blocks()[a.block].id());
    std::string idb(s.conversation[b.message].blocks()[b.block].id());
    auto c = replace(s.conversation, b.message, [&](json::object& o) { block_at(o, b.block)["id"] = ida; });
    // Keep its result pointing at it, so only the id rule is broken.
    for (Where r : find_blocks(c, BlockKind::tool_result, c.size()))
      if (c[r.message].blocks()[r.block].tool_use_id() == idb)
        c = replace(c, r.message, [&](json::object& o) { block_at(o, r.block)["tool_use_id"] = ida; });
    return c;
  }});
  m.push_back({"give a tool_use an id the API refuses", "unique_ids", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto uses = find_blocks(s.conversation, BlockKind::tool_use, s.conversation.size());
    if (uses.empty()) return std::nullopt;
    Where w = choose(uses, rng);
    std::string id(s.conversation[w.message].blocks()[w.block].id());
    auto c = replace(s.conversation, w.message, [&](json::object& o) { block_at(o, w.block)["id"] = "call." + id; });
    for (Where r : find_blocks(c, BlockKind::tool_result, c.size()))
      if (c[r.message].blocks()[r.block].tool_use_id() == id)
        c = replace(c, r.message, [&](json::object& o) { block_at(o, r.block)["tool_use_id"] = "call." + id; });
    return c;
  }});
  m.push_back({"drop the request", "request_kept", 0, [](const Subject& s, Rng&, std::size_t&) -> std::optional<Conversation> {
    if (s.request.empty()) return std::nullopt;
    Conversation c = s.conversation;
    for (Where w : find_blocks(c, BlockKind::text, c.size()))
      if (c[w.message].role() == Role::user && c[w.message].blocks()[w.block].text().find(s.request) != std::string_view::npos)
        c = replace(c, w.message, [&](json::object& o) {
          if (o["content"].is_string()) o["content"] = "something else";
          else block_at(o, w.block)["text"] = "something else";
        });
    for (std::size_t i = 0; i < c.size(); ++i)  // string content
      if (c[i].content_is_string() && c[i].role() == Role::user && c[i].text().find(s.request) != std::string::npos)
        c = replace(c, i, [&](json::object& o) { o["content"] = "something else"; });
    return c;
  }});
  m.push_back({"grow a message", "no_growth", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    std::size_t i = std::uniform_int_distribution<std::size_t>(0, s.conversation.size() - 1)(rng);
    return replace(s.conversation, i, [&](json::object& o) {
      if (o["content"].is_string()) o["content"] = std::string(o["content"].as_string()) + std::string(50, '+');
      else o["content"].as_array().push_back(json::object{{"type", "text"}, {"text", std::string(50, '+')}});
    });
  }});
  m.push_back({"edit the protected tail", "recent_intact", 0, [](const Subject& s, Rng& rng, std::size_t& exchanges) -> std::optional<Conversation> {
    exchanges = std::uniform_int_distribution<std::size_t>(1, 3)(rng);
    auto tail = compute_protected_tail(s.conversation, exchanges);
    if (tail.length(s.conversation) == 0) return std::nullopt;
    std::size_t i = std::uniform_int_distribution<std::size_t>(tail.begin, s.conversation.size() - 1)(rng);
    return replace(s.conversation, i, [&](json::object& o) {
      if (o["content"].is_string()) {
        o["content"] = "x";
        return;
      }
      auto& first = o["content"].as_array().front().as_object();
      first["compactor_mutation"] = true;  // any change at all
    });
  }});
  m.push_back({"replace a result's content without archiving it", "archived", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    auto results = find_blocks(s.conversation, BlockKind::tool_result, s.conversation.size());
    if (results.empty()) return std::nullopt;
    Where w = choose(results, rng);
    return replace(s.conversation, w.message, [&](json::object& o) { block_at(o, w.block)["content"] = "[removed]"; });
  }});
  m.push_back({"add a cache breakpoint", "cache_control", 0, [](const Subject& s, Rng& rng, std::size_t&) -> std::optional<Conversation> {
    std::size_t i = std::uniform_int_distribution<std::size_t>(0, s.conversation.size() - 1)(rng);
    if (s.conversation[i].content_is_string()) return std::nullopt;
    return replace(s.conversation, i, [&](json::object& o) {
      block_at(o, 0)["cache_control"] = json::object{{"type", "ephemeral"}};
    });
  }});
  m.push_back({"start with an assistant message", "structure", 0, [](const Subject& s, Rng&, std::size_t&) -> std::optional<Conversation> {
    if (s.conversation.size() < 3 || s.conversation[1].role() != Role::assistant) return std::nullopt;
    auto messages = s.conversation.messages();
    messages.erase(messages.begin());
    return s.conversation.with_messages(std::move(messages));
  }});
  return m;
}

std::vector<Subject> subjects() {
  std::vector<Subject> out;
  for (const auto& file : test::real_session_files()) {
    auto c = test::load_or_die(file);
    out.push_back({c, find_active_request(c).text});
  }
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    auto c = generate(seed);
    out.push_back({c, find_active_request(c).text});
  }
  return out;
}

TEST(Mutation, ValidSubjectsPassEveryChecker) {
  auto checkers = make_builtin_checkers();
  for (const Subject& s : subjects()) {
    // Control: every message rebuilt from its JSON (new pointers, same content) finds nothing.
    std::vector<MessagePtr> rebuilt;
    for (const MessagePtr& m : s.conversation.messages()) rebuilt.push_back(test::message_or_die(json::object(m->json())));
    auto candidate = s.conversation.with_messages(rebuilt);
    CheckInput in{s.conversation, candidate, compute_protected_tail(s.conversation, 2), {s.request}};
    in.unit = SizeUnit::bytes;
    auto v = run_checkers(checkers, in);
    EXPECT_TRUE(v.empty()) << v.front().to_string();
  }
}

TEST(Mutation, EverySingleMutationIsCaughtByTheCheckerNamedForIt) {
  auto checkers = make_builtin_checkers();
  auto kinds = mutations();
  auto all = subjects();
  std::map<std::string, int> applied;
  int total = 0;
  Rng rng(20261130);
  for (int round = 0; round < 40; ++round) {
    for (const Subject& s : all) {
      for (const Mutation& kind : kinds) {
        std::size_t exchanges = 0;
        auto candidate = kind.apply(s, rng, exchanges);
        if (!candidate) continue;
        CheckInput in{s.conversation, *candidate, compute_protected_tail(s.conversation, exchanges), {s.request}};
        auto violations = run_checkers(checkers, in);
        bool caught = false;
        for (const auto& v : violations) caught |= v.checker == kind.checker;
        ASSERT_TRUE(caught) << "\"" << kind.name << "\" (round " << round << ", " << s.conversation.size()
                            << " messages) was not caught by " << kind.checker << "; found "
                            << (violations.empty() ? std::string("nothing") : violations.front().to_string());
        ++applied[kind.name];
        ++total;
      }
    }
    if (total >= 2000) break;
  }
  EXPECT_GE(total, 1000);
  for (const Mutation& kind : kinds) EXPECT_GE(applied[kind.name], 30) << kind.name;
  std::string summary;
  for (const auto& [name, n] : applied) summary += "  " + name + ": " + std::to_string(n) + "\n";
  std::printf("%d mutations, all caught:\n%s", total, summary.c_str());
}

}  // namespace
}  // namespace compactor
