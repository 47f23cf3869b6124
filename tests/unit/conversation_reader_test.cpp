// The reader: formats, exact error texts with their positions, and the explicit JSON limits.
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace compactor {
namespace {

std::string error_of(const std::string& text, const std::string& source = "in.json") {
  ReadOptions options;
  options.source = source;
  auto c = read_conversation(text, options);
  EXPECT_FALSE(c.ok()) << "expected an error for: " << text;
  return c.ok() ? "" : c.error().message;
}

const std::string kUser = R"({"role":"user","content":"hi"})";

TEST(ConversationReader, ReadsMessagesArray) {
  auto c = test::parse_or_die("[" + kUser + "]");
  EXPECT_EQ(c.format(), InputFormat::messages_array);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].role(), Role::user);
  EXPECT_EQ(c[0].text(), "hi");
}

TEST(ConversationReader, ReadsRequestBodyAndKeepsOtherFields) {
  std::string body = R"({"model":"claude-x","max_tokens":1.0,"system":"be brief","tools":[{"name":"t"}],"messages":[)" + kUser +
                     R"(],"metadata":{"user_id":"u"}})";
  auto c = test::parse_or_die(body);
  EXPECT_EQ(c.format(), InputFormat::request_body);
  EXPECT_EQ(c.size(), 1u);
  // system + tools are in the budget: "\"be brief\"" is 10 bytes, [{"name":"t"}] 14.
  EXPECT_EQ(c.sizes().bytes, kUser.size() + 10 + 14);
  EXPECT_EQ(c.serialize(), body);
  // Replacing the message keeps every other field byte for byte.
  auto edited = c.with_messages({test::message_or_die(R"({"role":"user","content":"bye"})")});
  EXPECT_EQ(edited.serialize(), R"({"model":"claude-x","max_tokens":1.0,"system":"be brief","tools":[{"name":"t"}],"messages":[{"role":"user","content":"bye"}],"metadata":{"user_id":"u"}})");
}

TEST(ConversationReader, ReadsJsonl) {
  std::string text = kUser + "\n" + R"({"role":"assistant","content":[{"type":"text","text":"yo"}]})" + "\n";
  auto c = test::parse_or_die(text);
  EXPECT_EQ(c.format(), InputFormat::jsonl);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].role(), Role::assistant);
  EXPECT_EQ(c.serialize(), text);
  auto shorter = c.with_messages({c.messages()[0]});
  EXPECT_EQ(shorter.serialize(), kUser + "\n");
}

TEST(ConversationReader, JsonlNeedsOneMessageALine) {
  EXPECT_EQ(error_of(kUser + " " + kUser), "in.json:1:32 (byte 31): expected a new line after a JSONL message");
}

TEST(ConversationReader, SyntaxErrorsGiveByteOffsetAndLineColumn) {
  EXPECT_EQ(error_of("[\n  {\"role\" \"user\"}]"), "in.json:2:11 (byte 12): expected ':' after an object key");
  EXPECT_EQ(error_of("[{\"role\":\"user\",\"content\":\"hi\"}"), "in.json:1:32 (byte 31): unterminated array (opened at byte 0)");
  EXPECT_EQ(error_of("[1,]"), "in.json:1:4 (byte 3): unexpected character ']'");
  EXPECT_EQ(error_of("[tru]"), "in.json:1:2 (byte 1): invalid literal (expected true)");
  EXPECT_EQ(error_of("[01]"), "in.json:1:3 (byte 2): expected ',' or ']' in array");
  EXPECT_EQ(error_of("[\"a\\x\"]"), "in.json:1:4 (byte 3): invalid escape sequence in string");
  EXPECT_EQ(error_of("[\"\\ud800\"]"), "in.json:1:3 (byte 2): invalid \\u escape: high surrogate without a low surrogate");
  EXPECT_EQ(error_of("[" + kUser + "] x"), "in.json:1:34 (byte 33): unexpected content after the JSON document");
}

TEST(ConversationReader, ColumnCountsCodePoints) {
  // "é" is two bytes but one column.
  EXPECT_EQ(error_of("[\"é\" x]"), "in.json:1:6 (byte 6): expected ',' or ']' in array");
}

TEST(ConversationReader, InvalidUtf8GivesItsByteOffset) {
  std::string text = "[{\"role\":\"user\",\"content\":\"ab\xff\"}]";
  EXPECT_EQ(error_of(text), "in.json:1:30 (byte 29): invalid UTF-8 byte in string");
  // Overlong encoding and a UTF-16 surrogate encoded in UTF-8 are invalid too.
  EXPECT_EQ(error_of("[\"\xc0\xaf\"]"), "in.json:1:3 (byte 2): invalid UTF-8 byte in string");
  EXPECT_EQ(error_of("[\"\xed\xa0\x80\"]"), "in.json:1:3 (byte 2): invalid UTF-8 byte in string");
}

TEST(ConversationReader, DepthLimitIsExplicit) {
  std::string deep = R"([{"role":"user","content":[{"type":"x","v":)";
  // The message array is depth 1, the message 2, content 3, the block 4: 252 more reach 256.
  std::string nest(252, '[');
  std::string close(252, ']');
  auto ok = read_conversation(deep + nest + close + "}]}]");
  EXPECT_TRUE(ok.ok()) << (ok.ok() ? "" : ok.error().message);
  std::string err = error_of(deep + nest + "[" + "]" + close + "}]}]");
  EXPECT_EQ(err, "in.json:1:296 (byte 295): nesting deeper than the limit of 256");
}

TEST(ConversationReader, DuplicateKeysAreRefused) {
  EXPECT_EQ(error_of(R"([{"role":"user","content":"a","role":"assistant"}])"),
            "in.json:1:31 (byte 30): duplicate object key \"role\"");
  // Escapes are decoded before comparing: "\u0072ole" is "role".
  EXPECT_EQ(error_of(R"([{"role":"user","content":"a","\u0072ole":"x"}])"),
            "in.json:1:31 (byte 30): duplicate object key \"role\"");
}

// Messages are parsed while they are validated (one pass); the rules and the located errors are
// the scanner's in every input format.
TEST(ConversationReader, OnePassParsingKeepsTheScannersRules) {
  // Duplicate keys in a request body's messages and in JSONL lines, escaped or not, and deeper.
  EXPECT_EQ(error_of(R"({"messages":[{"role":"user","content":"a","r\u006fle":"x"}]})"),
            "in.json:1:43 (byte 42): duplicate object key \"role\"");
  EXPECT_EQ(error_of(kUser + "\n" + R"({"role":"user","content":[{"type":"text","text":"a","text":"b"}]})"),
            "in.json:2:53 (byte 83): duplicate object key \"text\"");
  // Keys that only look alike are not duplicates; neither are equal keys in different objects.
  auto c = read_conversation(R"([{"role":"user","content":[{"type":"text","text":"a","te\nxt":1,"x":{"text":2}}]}])");
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  // More than 16 keys (sorted, not compared pairwise).
  std::string many = R"([{"role":"user","content":"a")";
  for (int i = 0; i < 20; ++i) many += ",\"k" + std::to_string(i) + "\":" + std::to_string(i);
  EXPECT_TRUE(read_conversation(many + "}]").ok());
  EXPECT_EQ(error_of(many + R"(,"k\u0031":0}])"), "in.json:1:" + std::to_string(many.size() + 2) + " (byte " +
                                                     std::to_string(many.size() + 1) + "): duplicate object key \"k1\"");
  // An exponent of more than 9 significant digits, which Boost.JSON alone would take as 0.
  EXPECT_EQ(error_of(R"([{"role":"user","content":"a","n":0e0000000000000000000000001234567890}])"),
            "in.json:1:35 (byte 34): number out of range: its exponent has more than 9 digits");
  EXPECT_TRUE(read_conversation(R"([{"role":"user","content":"a","n":1.5e-000000000000123456789}])").ok());
  // The depth limit holds for a request body's messages (one level deeper) and for JSONL.
  std::string deep = R"({"messages":[{"role":"user","content":[{"type":"x","v":)";
  auto ok = read_conversation(deep + std::string(251, '[') + std::string(251, ']') + "}]}]}");
  EXPECT_TRUE(ok.ok()) << (ok.ok() ? "" : ok.error().message);
  EXPECT_EQ(error_of(deep + std::string(252, '[') + std::string(252, ']') + "}]}]}"),
            "in.json:1:307 (byte 306): nesting deeper than the limit of 256");
  std::string line = R"({"role":"user","content":[{"type":"x","v":)";
  ok = read_conversation(kUser + "\n" + line + std::string(253, '[') + std::string(253, ']') + "}]}");
  EXPECT_TRUE(ok.ok()) << (ok.ok() ? "" : ok.error().message);
  EXPECT_EQ(error_of(kUser + "\n" + line + std::string(254, '[') + std::string(254, ']') + "}]}"),
            "in.json:2:296 (byte " + std::to_string(kUser.size() + 1 + 295) + "): nesting deeper than the limit of 256");
  // A double is read from the message's span, as before: Boost.JSON 1.81's last bit depends on
  // how many bytes follow the number in its buffer.
  auto doubles = read_conversation(R"([{"role":"user","content":"a","n":444444.444444444444},)"
                                   R"({"role":"assistant","content":"b","n":444444.444444444444,"pad":"0123456789012345678901234567890123456789"}])");
  ASSERT_TRUE(doubles.ok()) << doubles.error().message;
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(boost::json::serialize((*doubles)[i].json().at("n")),
              boost::json::serialize(boost::json::parse((*doubles)[i].raw()).at("n")));
  // What is parsed is what the bytes say.
  auto parsed = read_conversation(R"([{"role":"user","content":[{"type":"text","text":"\u00e9\n\"x\""}],"n":-1.25e2}])");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ((*parsed)[0].blocks()[0].text(), "é\n\"x\"");
  EXPECT_EQ((*parsed)[0].json().at("n").as_double(), -125.0);
}

TEST(ConversationReader, SchemaErrorsNameTheMessage) {
  EXPECT_EQ(error_of("[]"), "in.json:1:1 (byte 0): the conversation has no messages");
  // A system entry inside messages is accepted only where the API takes one.
  EXPECT_EQ(error_of("[" + kUser + ",\n" + R"({"role":"assistant","content":"ok"})" + ",\n" + R"({"role":"system","content":"x"})" + "]"),
            "in.json:3:1: messages.2: a system entry must follow a user message (or an assistant message that ends in a server "
            "tool use), got an assistant message (rule: after a user turn)");
  EXPECT_EQ(error_of(R"([{"role":"user","content":42}])"),
            "in.json:1:2: messages.0: \"content\" must be a string or an array of blocks, got number");
  EXPECT_EQ(error_of(R"([{"role":"user","content":[{"text":"x"}]}])"),
            "in.json:1:2: messages.0: content.0: block has no \"type\"");
  EXPECT_EQ(error_of(R"([3])"), "in.json:1:2: messages.0: a message must be a JSON object, got number");
  EXPECT_EQ(error_of(R"({"model":"m"})"), "in.json:1:1 (byte 0): request body has no \"messages\"");
  EXPECT_EQ(error_of(R"({"messages":{}})"), "in.json:1:13 (byte 12): \"messages\" must be an array");
  EXPECT_EQ(error_of(""), "in.json:1:1 (byte 0): empty input: expected a messages array, a request body or JSONL messages");
}

TEST(ConversationReader, MissingFileIsAnError) {
  auto c = read_conversation_file("/nonexistent/in.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message, "/nonexistent/in.json: cannot read: No such file or directory");
}

}  // namespace
}  // namespace compactor
