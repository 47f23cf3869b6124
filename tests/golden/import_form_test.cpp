// `compactor import` writes Anthropic messages the Messages API takes: an OpenAI history's tool
// call arguments become the tool_use's input whether they are a JSON string or the object itself,
// and what the Chat adapter carries (a call's `index`, a message's `name`) is Chat's, so it is left
// out of the Anthropic form and said, never written into it.
#include "support/test_support.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>

namespace compactor {
namespace {

namespace json = boost::json;

const json::object& tool_use_of(const json::value& written) {
  const json::array& messages = written.is_array() ? written.as_array() : written.at("messages").as_array();
  return messages.at(1).at("content").as_array().at(0).as_object();
}

TEST(ImportForm, ArgumentsGivenAsAnObjectAreTheInput) {
  test::ScratchFolder dir("import-object-arguments");
  std::ofstream(dir / "history.json") << R"([
  {"role": "user", "content": "show me the hosts file"},
  {"role": "assistant", "content": null, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": {"path": "/etc/hosts"}}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "127.0.0.1 localhost"}])";
  auto r = test::run_cli({"import", "--input", "history.json", "--output", "out.json"}, "", dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string out = test::read_file((dir / "out.json").string());
  const json::value written = json::parse(out);
  EXPECT_EQ(tool_use_of(written).at("input"), json::parse(R"({"path": "/etc/hosts"})"));
  EXPECT_EQ(out.find("\"carried\""), std::string::npos) << out;
  EXPECT_EQ(test::run_cli({"check", "--input", "out.json"}, "", dir.string()).exit_code, 0);
}

TEST(ImportForm, WhatChatCarriesIsLeftOutOfTheAnthropicFormAndSaid) {
  test::ScratchFolder dir("import-carried");
  std::ofstream(dir / "history.json") << R"([
  {"role": "user", "content": "show me the hosts file", "name": "ana"},
  {"role": "assistant", "content": null, "tool_calls": [
    {"id": "call_1", "index": 0, "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"/etc/hosts\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "127.0.0.1 localhost"}])";
  auto r = test::run_cli({"import", "--input", "history.json", "--output", "out.json"}, "", dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "compactor import: the Anthropic form has no place for message member name (1), tool_use member index (1); "
                   "left out of out.json\n");
  const std::string out = test::read_file((dir / "out.json").string());
  EXPECT_EQ(out.find("\"carried\""), std::string::npos) << out;
  const json::value written = json::parse(out);
  EXPECT_EQ(tool_use_of(written).at("input"), json::parse(R"({"path": "/etc/hosts"})"));
  EXPECT_EQ(test::run_cli({"check", "--input", "out.json"}, "", dir.string()).exit_code, 0);
}

// A message that held only what the Chat adapter carried would be empty in the Anthropic form:
// the import fails, saying what was left out and the rule it broke, and writes nothing.
TEST(ImportForm, AMessageLeftEmptyIsRefusedAndNothingIsWritten) {
  test::ScratchFolder dir("import-left-empty");
  std::ofstream(dir / "history.json") << R"([{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},
  {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
  {"role":"tool","tool_call_id":"c1","content":"ok"}])";
  auto r = test::run_cli({"import", "--input", "history.json", "--output", "out.json"}, "", dir.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "FAIL history.json: the Anthropic form has no place for carried part image_url (1); without it, structure: "
                   "messages.0: all messages must have non-empty content except for the optional final assistant message\n");
  EXPECT_EQ(r.err, "");
  EXPECT_FALSE(std::filesystem::exists(dir / "out.json"));
}

}  // namespace
}  // namespace compactor
