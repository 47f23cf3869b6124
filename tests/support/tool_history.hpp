// A made-up agent history whose sizes a test can work out by hand: a task, then Read calls each
// answered by its file, as compact ASCII JSON (a message's chars are its bytes, and Boost.JSON
// writes it back byte for byte). Result `i` (from 1) holds `result_chars(i)` letters `fill`.
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace compactor::test {

inline std::vector<std::string> tool_history(std::size_t reads, const std::function<std::size_t(std::size_t)>& result_chars,
                                             char fill = 'a') {
  std::vector<std::string> messages = {R"({"role":"user","content":"Read the files one by one."})"};
  char id[16];
  for (std::size_t i = 1; i <= reads; ++i) {
    std::snprintf(id, sizeof id, "%02zu", i);
    messages.push_back(std::string(R"({"role":"assistant","content":[{"type":"tool_use","id":"toolu_)") + id +
                       R"(","name":"Read","input":{"file_path":"/w/f)" + id + R"(.txt"}}]})");
    messages.push_back(std::string(R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_)") + id + R"(","content":")" +
                       std::string(result_chars(i), fill) + R"("}]})");
  }
  return messages;
}

// A Messages API request around the first `count` messages.
inline std::string messages_request(const std::vector<std::string>& messages, std::size_t count, const std::string& model,
                                    const std::string& system) {
  std::string body = R"({"model":")" + model + R"(","max_tokens":1024,"system":")" + system + R"(","messages":[)";
  for (std::size_t i = 0; i < count; ++i) body += (i ? "," : "") + messages[i];
  return body + "]}";
}

// Code points of UTF-8 text (what Compactor's chars count).
inline std::size_t code_points(const std::string& text) {
  std::size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace compactor::test
