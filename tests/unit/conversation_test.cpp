// Structural sharing and byte-identical round trips.
#include "support/test_support.hpp"
#include "model/meter_key.hpp"

#include "compactor/message_edit.hpp"
#include "model/conversation_host.hpp"

#include <gtest/gtest.h>

namespace compactor {
namespace {

TEST(Conversation, RoundTripOfUntouchedInputIsByteIdentical) {
  // Numbers Boost.JSON would rewrite (1.0 → 1E0, integers above 2^64 → doubles), pretty
  // printing, and escapes all come back exactly.
  std::string text = "[\n  {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"\\u00e9\\/\"}],"
                     " \"n\": 1.0, \"big\": 123456789012345678901234567890},\n"
                     "  {\"role\": \"assistant\", \"content\": \"x\", \"e\": 1e400}\n]\n";
  auto c = test::parse_or_die(text);
  EXPECT_TRUE(ConversationHost::unchanged_from_input(c));
  EXPECT_EQ(c.serialize(), text);
}

TEST(Conversation, RealSessionsRoundTripByteIdentical) {
  for (const auto& file : test::real_session_files()) {
    std::string bytes = test::read_file(file);
    auto c = test::parse_or_die(bytes);
    EXPECT_EQ(c.serialize(), bytes) << file;
    // Rebuilt from the same message pointers (not the input buffer), it is still identical.
    auto copy = c.with_messages(std::vector<MessagePtr>(c.messages()));
    EXPECT_EQ(copy.serialize(), bytes) << file;
  }
}

// Tokens come from the conversation, never 0: without a meter they are the message's chars / 4,
// rounded up (the usual guess, as the chars4 meter counts): 38 chars, 10 tokens.
TEST(Conversation, TokensWithoutAMeterAreCharsOverFour) {
  Conversation c = Conversation::from_messages({test::message_or_die(R"({"role":"user","content":"abcdefghij"})")});
  EXPECT_EQ(c[0].chars(), 38u);  // {"role":"user","content":"abcdefghij"}
  EXPECT_EQ(c.size_of(c[0], SizeUnit::tokens), 10u);
  EXPECT_EQ(c.size_in(SizeUnit::tokens), 10u);
}

TEST(Conversation, OneMessageEditSharesEveryOtherMessage) {
  std::string text = test::read_file(test::real_session_files().front());
  auto c = test::parse_or_die(text);
  ASSERT_GT(c.size(), 10u);
  std::vector<MessagePtr> edited = c.messages();
  edited[5] = test::message_or_die(R"({"role":"user","content":"replaced"})");
  auto candidate = c.with_messages(edited);
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (i == 5) continue;
    EXPECT_EQ(candidate.messages()[i].get(), c.messages()[i].get()) << "messages." << i;
  }
  EXPECT_FALSE(ConversationHost::unchanged_from_input(candidate));
  // Every untouched message is written from its own input bytes, in the input's framing.
  std::string out = candidate.serialize();
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (i != 5) {
      EXPECT_NE(out.find(c[i].raw()), std::string::npos) << "messages." << i;
    }
  }
  EXPECT_NE(out.find(",\n{\"role\":\"user\",\"content\":\"replaced\"},\n"), std::string::npos);
  // And the candidate parses back to the same messages.
  auto again = test::parse_or_die(out);
  ASSERT_EQ(again.size(), c.size());
  EXPECT_EQ(again[4].raw(), c[4].raw());
  EXPECT_EQ(again[5].text(), "replaced");
}

TEST(Conversation, SizesAreCachedPerMessageAndSummed) {
  auto c = test::parse_or_die(R"([{"role":"user","content":"héllo"}])");
  EXPECT_EQ(c[0].bytes(), 34u);
  EXPECT_EQ(c[0].chars(), 33u);
  EXPECT_EQ(c.sizes().bytes, 34u);
  EXPECT_EQ(c.size_in(SizeUnit::chars), 33u);
}

TEST(Conversation, ImagesCountAtTheFixedEstimate) {
  std::string data(100000, 'A');
  auto m = test::message_or_die(R"({"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":")" +
                                data + R"("}}]})");
  std::uint64_t frame = m->raw().size() - data.size();
  EXPECT_EQ(m->bytes(), frame + kMediaBlockSize);
  // Inside a tool result too.
  auto r = test::message_or_die(
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":")" +
      data + R"("}}]}]})");
  EXPECT_EQ(r->bytes(), r->raw().size() - data.size() + kMediaBlockSize);
}

TEST(Conversation, TypedBlockAccess) {
  auto m = test::message_or_die(
      R"({"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},)"
      R"({"type":"text","text":"ok"},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a"}},)"
      R"({"type":"mcp_tool_use","id":"m1","name":"x","server_name":"s","input":{}},{"type":"mcp_tool_result","tool_use_id":"m1","content":[]},)"
      R"({"type":"fancy_new_block","x":1}]})");
  const auto& b = m->blocks();
  ASSERT_EQ(b.size(), 6u);
  EXPECT_EQ(b[0].kind(), BlockKind::thinking);
  EXPECT_EQ(b[0].signature(), "sig");
  EXPECT_EQ(b[1].text(), "ok");
  EXPECT_EQ(b[2].kind(), BlockKind::tool_use);
  EXPECT_EQ(b[2].id(), "toolu_1");
  EXPECT_EQ(b[2].name(), "Read");
  EXPECT_EQ(b[2].input()->as_object().at("path").as_string(), "a");
  EXPECT_EQ(b[3].kind(), BlockKind::server_tool_use);
  EXPECT_EQ(b[4].kind(), BlockKind::server_tool_result);
  EXPECT_EQ(b[5].kind(), BlockKind::other);
  EXPECT_EQ(b[5].type(), "fancy_new_block");
  auto r = test::message_or_die(R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x","is_error":true}]})");
  EXPECT_EQ(r->blocks()[0].tool_use_id(), "toolu_1");
  EXPECT_TRUE(r->blocks()[0].is_error());
  EXPECT_EQ(r->blocks()[0].content()->as_string(), "x");
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

// A system entry inside `messages` counts like the top-level `system`: its JSON in
// chars and bytes, its text through the meter (a meter that counts one token per char here).
class CharMeter final : public Meter {
 public:
  CharMeter() : Meter(MeterKey{}) {}
  std::string_view kind() const override { return "one-per-char"; }
  std::uint64_t count_text(std::string_view utf8) const override { return utf8.size(); }
};

TEST(Conversation, SystemEntriesCountLikeTheTopLevelSystem) {
  const std::string entry = R"({"role":"system","content":[{"type":"text","text":"plan mode"},{"type":"text","text":"on"}]})";
  const std::string user = R"({"role":"user","content":"hi"})";
  auto without = test::parse_or_die(R"({"system":"s","messages":[)" + user + "]}");
  auto with = test::parse_or_die(R"({"system":"s","messages":[)" + user + "," + entry + "]}");
  EXPECT_EQ(with.size(), 1u);
  EXPECT_EQ(with.sizes().chars - without.sizes().chars, entry.size());
  EXPECT_EQ(with.sizes().bytes - without.sizes().bytes, entry.size());
  auto meter = std::make_shared<CharMeter>();
  EXPECT_EQ(ConversationHost::with_meter(with, meter).sizes().tokens - ConversationHost::with_meter(without, meter).sizes().tokens, 9u + 2u);  // "plan mode", "on"
}

// The host's placement: an entry follows the message it followed while that one is kept; when a
// stage drops it, the entry goes to the first place the API accepts from where the messages
// after it went (after a user message, before an assistant message or at the end).
TEST(Conversation, SystemEntriesFollowTheirMessageOrTheNextValidPlace) {
  auto c = test::parse_or_die(
      R"([{"role":"user","content":"a"},{"role":"system","content":"S"},{"role":"assistant","content":"b"},)"
      R"({"role":"user","content":"c"},{"role":"assistant","content":"d"},{"role":"user","content":"e"}])");
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c.system_slots(), std::vector<std::size_t>{1});
  const auto& m = c.messages();
  // Kept: the same place.
  EXPECT_EQ(c.with_messages({m[0], m[1], m[2], m[3], m[4]}).system_slots(), std::vector<std::size_t>{1});
  // Its user message replaced by a new one: before the assistant message that came after it.
  auto summary = test::message_or_die(R"({"role":"user","content":"summary"})");
  auto replaced = c.with_messages({summary, m[1], m[2], m[3], m[4]});
  EXPECT_EQ(replaced.system_slots(), std::vector<std::size_t>{1});
  EXPECT_EQ(replaced.serialize(), R"([{"role":"user","content":"summary"},{"role":"system","content":"S"},)"
                                  R"({"role":"assistant","content":"b"},{"role":"user","content":"c"},)"
                                  R"({"role":"assistant","content":"d"},{"role":"user","content":"e"}])");
  // Its user message and the assistant after it dropped: after the next user message kept.
  EXPECT_EQ(c.with_messages({m[2], m[3], m[4]}).system_slots(), std::vector<std::size_t>{1});
  // Its user message dropped, the assistant after it first: not before it (no user message
  // there), after the next user message.
  EXPECT_EQ(c.with_messages({m[1], m[2], m[3]}).system_slots(), std::vector<std::size_t>{2});
  // Only the last user message kept: the end, after it.
  EXPECT_EQ(c.with_messages({m[4]}).system_slots(), std::vector<std::size_t>{1});
  // Only an assistant message: no valid place at all.
  EXPECT_EQ(c.with_messages({m[1]}).system_slots(), std::vector<std::size_t>{Conversation::kUnplaced});
}

// A text edit keeps every other field and block as it was, and string content as a string.
TEST(MessageEdit, WithTextsReplacesTextBlocksOnly) {
  auto blocks = test::message_or_die(
      R"({"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},)"
      R"({"type":"text","text":"long","cache_control":{"type":"ephemeral"}},{"type":"text","text":"keep"}]})");
  auto edited = with_texts(*blocks, {{1, "short"}});
  ASSERT_TRUE(edited.ok()) << edited.error().message;
  EXPECT_EQ((*edited)->raw(), R"({"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},)"
                              R"({"type":"text","text":"short","cache_control":{"type":"ephemeral"}},{"type":"text","text":"keep"}]})");
  EXPECT_EQ(blocks->blocks()[1].text(), "long");  // the original is untouched
  auto thinking = with_texts(*blocks, {{0, "x"}});
  ASSERT_FALSE(thinking.ok());
  EXPECT_EQ(thinking.error().message, "content.0 is not a text block");
  EXPECT_EQ(with_texts(*blocks, {{3, "x"}}).error().message, "content.3 is not a text block");

  auto plain = test::message_or_die(R"({"role":"user","content":"a long question"})");
  auto shortened = with_texts(*plain, {{0, "a question"}});
  ASSERT_TRUE(shortened.ok()) << shortened.error().message;
  EXPECT_EQ((*shortened)->raw(), R"({"role":"user","content":"a question"})");
}

}  // namespace
}  // namespace compactor
