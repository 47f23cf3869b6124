// The MCP server: the JSON-RPC protocol object (version negotiation, the lifecycle, every
// malformed message answered with its code), the archive's restore and search tools on a real
// archive folder (every blob form, paging in code points, images, bounds, every refusal a tool
// error), the stdio transport, and `compactor mcp`'s arguments. Expected values are written out
// here from the MCP and JSON-RPC specifications, never taken from the code under test.
#include "support/test_support.hpp"

#include "archive/archive_store.hpp"
#include "compactor/size_unit.hpp"
#include "mcp/archive_tools.hpp"
#include "mcp/mcp_server.hpp"
#include "mcp/stdio_transport.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using mcp::McpServer;
using mcp::McpSession;

// ---- the protocol object, with one tool that echoes its arguments ----------------------------

McpServer echo_server() {
  mcp::Tool echo;
  echo.name = "echo";
  echo.title = "Echo";
  echo.description = "Gives its arguments back.";
  echo.input_schema = json::object{{"type", "object"}};
  echo.call = [](const json::object& arguments) {
    if (arguments.contains("fail")) return mcp::ToolResult::error("failed as asked");
    if (arguments.contains("throw")) throw std::runtime_error("thrown as asked");
    return mcp::ToolResult::text(json::serialize(arguments));
  };
  return McpServer(mcp::ServerInfo{"compactor", "Compactor archive", "9.9.9", "Read the archive."}, {echo});
}

// The response to one message, parsed; null when there is none.
json::value answer(const McpServer& server, McpSession& session, std::string_view message) {
  std::optional<std::string> out = server.handle(message, session);
  if (!out) return nullptr;
  EXPECT_EQ(out->find('\n'), std::string::npos) << "a response is one line: " << *out;
  return json::parse(*out);
}

std::string initialize_request(std::string_view version, int id = 1) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"initialize","params":{"protocolVersion":")" +
         std::string(version) + R"(","capabilities":{},"clientInfo":{"name":"test","version":"1"}}})";
}

McpSession initialized(const McpServer& server) {
  McpSession session;
  answer(server, session, initialize_request("2025-11-25"));
  answer(server, session, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  return session;
}

json::value error_response(const json::value& id, int code, std::string_view message) {
  return json::object{{"jsonrpc", "2.0"}, {"id", id}, {"error", json::object{{"code", code}, {"message", message}}}};
}

TEST(McpProtocol, InitializeAnswersWithTheClientsVersionWhenSpokenElseTheNewest) {
  const McpServer server = echo_server();
  for (std::string_view version : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    McpSession session;
    json::value r = answer(server, session, initialize_request(version));
    EXPECT_EQ(r, json::parse(R"({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":")" + std::string(version) +
                             R"(","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"compactor","title":)"
                             R"("Compactor archive","version":"9.9.9"},"instructions":"Read the archive."}})"));
    EXPECT_EQ(session.protocol_version, std::string(version));
    EXPECT_FALSE(session.client_ready);
    EXPECT_TRUE(answer(server, session, R"({"jsonrpc":"2.0","method":"notifications/initialized"})").is_null());
    EXPECT_TRUE(session.client_ready);
  }
  // A version this server does not speak (older, newer, or not a date): the newest it speaks.
  for (std::string_view version : {"2024-10-07", "2026-07-28", "1.0.0"}) {
    McpSession session;
    json::value r = answer(server, session, initialize_request(version));
    EXPECT_EQ(r.at("result").at("protocolVersion"), "2025-11-25") << version;
  }
}

TEST(McpProtocol, TheLifecycleIsKept) {
  const McpServer server = echo_server();
  McpSession session;
  // Before initialize: ping is answered, anything else refused, naming the request.
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":"p","method":"ping"})"),
            json::parse(R"({"jsonrpc":"2.0","id":"p","result":{}})"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})"),
            error_response(7, -32600, "Invalid Request: tools/list before initialize"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo"}})"),
            error_response(8, -32600, "Invalid Request: tools/call before initialize"));
  // initialize needs its protocolVersion, a string; capabilities and clientInfo are objects.
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{}})"),
            error_response(2, -32602, "Invalid params: initialize needs protocolVersion, a string"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":3,"method":"initialize"})"),
            error_response(3, -32602, "Invalid params: initialize needs protocolVersion, a string"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":20251125}})"),
            error_response(4, -32602, "Invalid params: initialize needs protocolVersion, a string"));
  EXPECT_EQ(answer(server, session,
                   R"({"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":[]}})"),
            error_response(5, -32602, "Invalid params: initialize's capabilities must be an object"));
  EXPECT_FALSE(session.protocol_version);
  // The initialized notification before initialize changes nothing.
  EXPECT_TRUE(answer(server, session, R"({"jsonrpc":"2.0","method":"notifications/initialized"})").is_null());
  EXPECT_FALSE(session.client_ready);
  ASSERT_TRUE(answer(server, session, initialize_request("2025-06-18")).as_object().contains("result"));
  // A request that overtakes the initialized notification is served.
  EXPECT_FALSE(session.client_ready);
  EXPECT_TRUE(answer(server, session, R"({"jsonrpc":"2.0","id":6,"method":"tools/list"})").as_object().contains("result"));
  // Once only.
  EXPECT_EQ(answer(server, session, initialize_request("2025-06-18", 9)),
            error_response(9, -32600, "Invalid Request: the session is already initialized"));
  EXPECT_EQ(session.protocol_version, "2025-06-18");
  // A session the transport knows the version of operates at once.
  McpSession assumed = McpSession::assumed("2025-06-18");
  EXPECT_TRUE(answer(server, assumed, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})").as_object().contains("result"));
}

TEST(McpProtocol, ToolsAreListedAndCalled) {
  const McpServer server = echo_server();
  McpSession session = initialized(server);
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"), json::parse(R"(
    {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","title":"Echo","description":"Gives its arguments back.",
     "inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,
     "openWorldHint":false}}]}})"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"x"}})"),
            error_response(2, -32602, "Invalid params: unknown cursor (tools/list has one page)"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}})"),
            json::parse(R"({"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"a\":1}"}],"isError":false}})"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo"}})"),
            json::parse(R"({"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{}"}],"isError":false}})"));
  // A tool's own failure is a result the model reads, not a protocol error.
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"fail":1}}})"),
            json::parse(R"({"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"failed as asked"}],"isError":true}})"));
  // What the protocol cannot carry out is: no name, no such tool, arguments not an object.
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}})"),
            error_response(6, -32602, "Invalid params: tools/call needs name, a string"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"restores"}})"),
            error_response(7, -32602, "Unknown tool: restores"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":"a=1"}})"),
            error_response(8, -32602, "Invalid params: tools/call's arguments must be an object"));
  // An exception in a tool is an internal error naming the request; the server goes on.
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"throw":1}}})"),
            error_response(9, -32603, "Internal error: thrown as asked"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":10,"method":"ping"})"), json::parse(R"({"jsonrpc":"2.0","id":10,"result":{}})"));
}

TEST(McpProtocol, MalformedMessagesAreAnsweredWithTheirCode) {
  const McpServer server = echo_server();
  McpSession session = initialized(server);
  // -32700: not JSON (or deeper than any request).
  for (std::string_view bad : {"", "not json", "{\"jsonrpc\":\"2.0\",", "{\"a\":1} {\"b\":2}", "\"\\ud800\""})
    EXPECT_EQ(answer(server, session, bad).at("error").at("code"), -32700) << bad;
  std::string deep = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":)" + std::string(100, '[') + std::string(100, ']') + "}}";
  EXPECT_EQ(answer(server, session, deep).at("error").at("code"), -32700);
  EXPECT_EQ(answer(server, session, "not json").at("id"), nullptr);
  // -32600: JSON, but not a message.
  EXPECT_EQ(answer(server, session, "[]"),
            error_response(nullptr, -32600, "Invalid Request: batches are not supported (MCP removed them in 2025-06-18)"));
  EXPECT_EQ(answer(server, session, R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])").at("error").at("code"), -32600);
  EXPECT_EQ(answer(server, session, "42"), error_response(nullptr, -32600, "Invalid Request: a message is a JSON object"));
  EXPECT_EQ(answer(server, session, R"({"id":1,"method":"ping"})"), error_response(1, -32600, R"(Invalid Request: "jsonrpc" must be "2.0")"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"1.0","id":"a","method":"ping"})"),
            error_response("a", -32600, R"(Invalid Request: "jsonrpc" must be "2.0")"));
  for (std::string_view id : {"null", "1.5", "{}", "[1]", "true"})
    EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":)" + std::string(id) + R"(,"method":"ping"})"),
              error_response(nullptr, -32600, R"(Invalid Request: "id" must be a string or an integer)"))
        << id;
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":2})"), error_response(2, -32600, R"(Invalid Request: no "method")"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":3,"method":7})"),
            error_response(3, -32600, R"(Invalid Request: "method" must be a string)"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":4,"method":"ping","params":"x"})"),
            error_response(4, -32600, R"(Invalid Request: "params" must be an object)"));
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":5,"method":"ping","params":null})"),
            error_response(5, -32600, R"(Invalid Request: "params" must be an object)"));
  // -32602: JSON-RPC allows positional params; no MCP method takes them.
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":6,"method":"tools/list","params":[]})"),
            error_response(6, -32602, R"(Invalid params: "params" must be an object)"));
  // -32601: a method this server does not have (server/discover is the 2026-07-28 revision's
  // probe: a dual-era client reads -32601 as "fall back to initialize").
  for (std::string_view method : {"resources/list", "prompts/list", "server/discover", "logging/setLevel", "Ping"})
    EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":7,"method":")" + std::string(method) + R"("})"),
              error_response(7, -32601, "Method not found: " + std::string(method)));
  // Over the bound: refused unread.
  std::string big = R"({"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":")" + std::string(McpServer::kMaxMessageBytes, 'x') + "\"}}";
  EXPECT_EQ(answer(server, session, big), error_response(nullptr, -32600, "Invalid Request: a message is at most 1048576 bytes"));
  // Never answered: notifications (known, unknown, malformed params) and responses.
  for (std::string_view quiet : {R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})",
                                 R"({"jsonrpc":"2.0","method":"notifications/unknown"})",
                                 R"({"jsonrpc":"2.0","method":"notifications/initialized","params":[1]})",
                                 R"({"jsonrpc":"2.0","id":99,"result":{}})",
                                 R"({"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"no"}})"})
    EXPECT_TRUE(answer(server, session, quiet).is_null()) << quiet;
  // Ids come back as they were sent.
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":"req-\u00e9","method":"ping"})").at("id"), "req-\u00e9");
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"})").at("id"),
            18446744073709551615ull);
  EXPECT_EQ(answer(server, session, R"({"jsonrpc":"2.0","id":-3,"method":"ping"})").at("id"), -3);
  // After all that the session still works.
  EXPECT_TRUE(answer(server, session, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})").as_object().contains("result"));
}

// ---- the archive's tools ---------------------------------------------------------------------

// An archive folder holding `blobs`, committed as `run` commits them (one pack).
std::vector<std::string> archive_blobs(const fs::path& dir, const std::vector<std::string>& blobs) {
  ArchiveStore store(dir.string());
  std::vector<std::string> receipts;
  for (const std::string& b : blobs) {
    auto r = store.put(std::string_view(b));
    if (!r) throw std::runtime_error(r.error().message);
    receipts.push_back(*r);
  }
  if (auto c = store.commit(); !c) throw std::runtime_error(c.error().message);
  return receipts;
}

json::object call(const mcp::ArchiveTools& tools, const char* tool, json::object arguments) {
  mcp::ToolResult r = std::string_view(tool) == "restore" ? tools.restore(arguments) : tools.search(arguments);
  return json::object{{"content", r.content}, {"isError", r.is_error}};
}

json::object text_result(std::string_view text, bool error = false) {
  return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", text}}}}, {"isError", error}};
}

std::string json_string(std::string_view text) { return json::serialize(json::string(text)); }

TEST(McpArchiveTools, ARestoredToolResultIsItsTextDecoded) {
  test::ScratchFolder dir("mcp-text");
  auto r = archive_blobs(dir / "a", {R"("line one\nline \"two\"\t\u00e9\u2713")", "plain text, not JSON\n"});
  mcp::ArchiveTools tools((dir / "a").string());
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}}), text_result("line one\nline \"two\"\t\xC3\xA9\xE2\x9C\x93"));
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[1]}}), text_result("plain text, not JSON\n"));
  // A page of 12 code points from 5: "one\nline \"tw", then what is left.
  json::object page = call(tools, "restore", {{"receipt", r[0]}, {"offset", 5}, {"max_chars", 12}});
  EXPECT_EQ(page, json::parse(R"({"content":[{"type":"text","text":"one\nline \"tw"},
                                 {"type":"text","text":"5 more chars: call again with offset=17"}],"isError":false})"));
  // Code points, not bytes: the last two are é and ✓.
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}, {"offset", 20}}), text_result("\xC3\xA9\xE2\x9C\x93"));
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}, {"offset", 21}, {"max_chars", 1}}), text_result("\xE2\x9C\x93"));
  // A whole number written as a float is a whole number.
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}, {"offset", 21.0}}), text_result("\xE2\x9C\x93"));
}

TEST(McpArchiveTools, ALongResultIsReadInPagesThatJoinToIt) {
  test::ScratchFolder dir("mcp-pages");
  // 45,000 code points of 1 to 4 bytes each.
  std::string text;
  const char* pieces[] = {"a", "\xC3\xA9", "\xE2\x9C\x93", "\xF0\x9F\x98\x80", "\n"};
  for (int i = 0; i < 45000; ++i) text += pieces[(i * 7) % 5];
  auto r = archive_blobs(dir / "a", {json_string(text)});
  mcp::ArchiveTools tools((dir / "a").string());
  std::string joined;
  std::uint64_t offset = 0;
  std::vector<std::string> trailers;
  for (int pages = 0; pages < 10; ++pages) {
    json::object page = call(tools, "restore", {{"receipt", r[0]}, {"offset", offset}});
    ASSERT_EQ(page.at("isError"), false);
    const json::array& content = page.at("content").as_array();
    std::string part(content.at(0).at("text").as_string());
    EXPECT_LE(count_code_points(part), 20000u);
    joined += part;
    offset += count_code_points(part);
    if (content.size() == 1) break;
    trailers.emplace_back(content.at(1).at("text").as_string());
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(trailers, (std::vector<std::string>{"25000 more chars: call again with offset=20000",
                                                "5000 more chars: call again with offset=40000"}));
  // Past the end, and bounds on the page.
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}, {"offset", 45000}}),
            text_result("offset 45000 is past the end: " + r[0] + " holds 45000 chars", true));
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}, {"max_chars", 100001}}),
            text_result("max_chars must be a whole number from 1 to 100000, got 100001", true));
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}, {"max_chars", 0}}),
            text_result("max_chars must be a whole number from 1 to 100000, got 0", true));
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}, {"offset", -1}}),
            text_result("offset must be a whole number from 0 to 9223372036854775807, got -1", true));
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}, {"offset", "20000"}}),
            text_result("offset must be a whole number from 0 to 9223372036854775807, got \"20000\" (a string)", true));
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}, {"offset", 1.5}}),
            text_result("offset must be a whole number from 0 to 9223372036854775807, got 1.5", true));
}

TEST(McpArchiveTools, ImagesComeBackAsImageContentFourAPage) {
  test::ScratchFolder dir("mcp-images");
  json::array blocks{json::object{{"type", "text"}, {"text", "five screenshots"}}};
  for (int i = 1; i <= 5; ++i)
    blocks.push_back(json::object{{"type", "image"},
                                  {"source", json::object{{"type", "base64"}, {"media_type", "image/png"}, {"data", "AAAA" + std::to_string(i)}}}});
  blocks.push_back(json::object{
      {"type", "document"},
      {"source", json::object{{"type", "base64"}, {"media_type", "application/pdf"}, {"data", std::string(1000, 'Q')}}}});
  auto r = archive_blobs(dir / "a", {json::serialize(blocks)});
  mcp::ArchiveTools tools((dir / "a").string());
  // Each image is its placeholder on its line; the fifth starts a second page.
  std::string lines = "five screenshots\n";
  for (int i = 1; i <= 4; ++i) lines += "[image " + std::to_string(i) + ", image/png: given as image content]\n";
  const std::uint64_t fifth = count_code_points(lines);
  json::array first{json::object{{"type", "text"}, {"text", lines}}};
  for (int i = 1; i <= 4; ++i)
    first.push_back(json::object{{"type", "image"}, {"data", "AAAA" + std::to_string(i)}, {"mimeType", "image/png"}});
  const std::string rest = "[image 5, image/png: given as image content]\n"
                           R"({"type":"document","source":{"type":"base64","media_type":"application/pdf","data":)"
                           R"("[1000 bytes of base64 left out; `compactor restore` with this receipt gives them]"}})";
  first.push_back(json::object{{"type", "text"},
                               {"text", std::to_string(count_code_points(rest)) + " more chars: call again with offset=" + std::to_string(fifth)}});
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}}), (json::object{{"content", first}, {"isError", false}}));
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}, {"offset", fifth}}),
            json::parse(R"({"content":[{"type":"text","text":)" + json_string(rest) +
                        R"(},{"type":"image","data":"AAAA5","mimeType":"image/png"}],"isError":false})"));
}

TEST(McpArchiveTools, ASnapshotIsOneMessageALine) {
  test::ScratchFolder dir("mcp-snapshot");
  // The messages' own bytes, as snip archives them: the second was pretty-printed in its input.
  const std::string snapshot =
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]}]})"
      "\n{\n  \"role\": \"assistant\",\n  \"content\": \"the \\\"key\\\" is\\n42\"\n}\n";
  auto r = archive_blobs(dir / "a", {snapshot});
  mcp::ArchiveTools tools((dir / "a").string());
  const std::string view =
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"[image 1, image/jpeg: given as image content]"}}]}]})"
      "\n"
      R"({"role":"assistant","content":"the \"key\" is\n42"})"
      "\n";
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}}),
            json::parse(R"({"content":[{"type":"text","text":)" + json_string(view) +
                        R"(},{"type":"image","data":"/9j/","mimeType":"image/jpeg"}],"isError":false})"));
  // The page that holds the image's placeholder carries it; one that does not, not.
  const std::uint64_t placeholder = count_code_points(view.substr(0, view.find("[image 1")));
  json::object from = call(tools, "restore", {{"receipt", r[0]}, {"offset", placeholder}, {"max_chars", 10}});
  EXPECT_EQ(from.at("content").as_array().at(1).at("type"), "image");
  json::object before = call(tools, "restore", {{"receipt", r[0]}, {"max_chars", placeholder}});
  EXPECT_EQ(before.at("content").as_array().at(1).at("type"), "text");
}

TEST(McpArchiveTools, SearchFollowsTheReceiptsABlobNames) {
  test::ScratchFolder dir("mcp-search");
  // An old result, a snapshot whose marker names it, and a summary's snapshot naming that one.
  const std::string old = "first line\nERROR: disk full on /dev/sda1\nlast line";
  auto r = archive_blobs(dir / "a", {json_string(old)});
  const std::string middle = R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[compactor: 48 chars archived as )" +
                             r[0] + R"(]"}]})" + "\n" + R"({"role":"assistant","content":"ERROR: \"disk\" again"})" + "\n";
  r.push_back(archive_blobs(dir / "a", {middle})[0]);
  const std::string summary = R"({"role":"user","content":"[compactor summary] … the history before this is archived as )" + r[1] +
                              R"( … ERROR: none here"})" + "\n" + std::string(400, 'x') + "ERROR-free\n";
  r.push_back(archive_blobs(dir / "a", {json_string(summary)})[0]);
  mcp::ArchiveTools tools((dir / "a").string());
  json::object found = call(tools, "search", {{"pattern", "ERROR"}, {"receipt", r[2]}});
  // Offsets are code points in each blob's view (… is one): a hit's line, or 100 chars before the
  // match when the line is long.
  const std::uint64_t long_line = count_code_points(summary.substr(0, summary.find('\n') + 1));
  EXPECT_EQ(found, text_result(r[2] + " offset=0: {\"role\":\"user\",\"content\":\"[compactor summary] … the history before this is archived as " +
                               r[1] + " … ERROR: none here\"}\n" + r[2] + " offset=" + std::to_string(long_line + 300) + ": …" +
                               std::string(100, 'x') + "ERROR-free\n" + r[1] + " offset=" +
                               std::to_string(count_code_points(middle.substr(0, middle.find('\n') + 1))) +
                               ": {\"role\":\"assistant\",\"content\":\"ERROR: \\\"disk\\\" again\"}\n" + r[0] +
                               " offset=11: ERROR: disk full on /dev/sda1\n4 matching lines in 3 of 3 blobs searched (" + r[2] +
                               " and the 2 blobs it leads to)"));
  // Each offset restores from the hit.
  json::object at = call(tools, "restore", {{"receipt", r[0]}, {"offset", 11}, {"max_chars", 6}});
  EXPECT_EQ(at.at("content").as_array().at(0).at("text"), "ERROR:");
  // In messages, JSON escapes text: a quoted pattern is found as written there too.
  EXPECT_EQ(call(tools, "search", {{"pattern", "\"disk\" again"}, {"receipt", r[1]}}),
            text_result(r[1] + " offset=" + std::to_string(count_code_points(middle.substr(0, middle.find('\n') + 1))) +
                        ": {\"role\":\"assistant\",\"content\":\"ERROR: \\\"disk\\\" again\"}\n1 matching line in 1 of 2 blobs searched (" +
                        r[1] + " and the blob it leads to)"));
  EXPECT_EQ(call(tools, "search", {{"pattern", "absent"}, {"receipt", r[0]}}),
            text_result("no line contains \"absent\" in " + r[0]));
  EXPECT_EQ(call(tools, "search", {{"pattern", "a\nb"}, {"receipt", r[0]}}),
            text_result("pattern holds a line break: search finds text within one line", true));
  EXPECT_EQ(call(tools, "search", {{"pattern", ""}, {"receipt", r[0]}}),
            text_result("pattern is required: the text to find, a non-empty string", true));
  EXPECT_EQ(call(tools, "search", {{"pattern", "x"}, {"receipt", r[0]}, {"max", 3}}),
            text_result("unknown argument \"max\": search takes pattern and receipt", true));
}

TEST(McpArchiveTools, SearchIsBounded) {
  test::ScratchFolder dir("mcp-bounded");
  std::string many;
  for (int i = 0; i < 120; ++i) many += "hit " + std::to_string(i) + "\n";
  // It also names a receipt this archive does not hold.
  const std::string gone = "sha256:" + std::string(64, 'e');
  auto r = archive_blobs(dir / "a", {json_string(many + "see " + gone)});
  mcp::ArchiveTools tools((dir / "a").string());
  json::object found = call(tools, "search", {{"pattern", "hit"}, {"receipt", r[0]}});
  std::string text(found.at("content").as_array().at(0).at("text").as_string());
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 50);
  EXPECT_EQ(text.substr(text.rfind('\n') + 1),
            "120 matching lines in 1 of 1 blob searched (" + r[0] +
                "); the first 50 are shown: give a longer pattern; 1 named receipt(s) could not be read (not in this archive, or "
                "corrupted)");
}

TEST(McpArchiveTools, EveryRefusalIsAToolError) {
  test::ScratchFolder dir("mcp-refusals");
  const fs::path archive = dir / "a";
  auto r = archive_blobs(archive, {"\"good\"", "\"other\""});
  mcp::ArchiveTools tools(archive.string());
  // Malformed receipts, a path among them, never reach the file system.
  for (json::value bad : {json::value("sha256:ABC"), json::value("../../etc/passwd"),
                          json::value("sha256:" + std::string(64, 'A')), json::value("sha256:" + std::string(63, 'a') + "/")})
    EXPECT_EQ(call(tools, "restore", {{"receipt", bad}}),
              text_result(json::serialize(bad) + " is not a receipt: a receipt is sha256: and 64 lowercase hex digits, as a marker names it", true));
  EXPECT_EQ(call(tools, "restore", {{"receipt", 12}}), text_result("receipt must be a string: sha256: and 64 lowercase hex digits", true));
  EXPECT_EQ(call(tools, "restore", {}),
            text_result("receipt is required: the sha256:… that a [compactor …] marker or a summary names", true));
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}, {"path", "/etc"}}),
            text_result("unknown argument \"path\": restore takes receipt, offset and max_chars", true));
  // Unknown.
  const std::string unknown = "sha256:" + std::string(64, '0');
  EXPECT_EQ(call(tools, "restore", {{"receipt", unknown}}),
            text_result(archive.string() + ": no blob " + unknown + " in this archive (no loose file " + archive.string() + "/00/" +
                            std::string(64, '0') + ": No such file or directory; no pack indexes it)",
                        true));
  // Corrupted: a loose file at the blob's name, read first, holding other bytes.
  const std::string loose = ArchiveStore(archive.string()).path_of(r[0]);
  fs::create_directories(fs::path(loose).parent_path());
  std::ofstream(loose) << "\"evil\"";
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}}),
            text_result(loose + ": the blob does not match its hash (the archive is corrupted)", true));
  // A symbolic link, a FIFO: not blobs, and not followed or waited on.
  fs::remove(loose);
  fs::create_symlink("/etc/passwd", loose);
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}}),
            text_result(loose + ": is a symbolic link, not a blob (the archive was tampered with)", true));
  fs::remove(loose);
  ASSERT_EQ(::mkfifo(loose.c_str(), 0600), 0);
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[0]}}),
            text_result(loose + ": is not a regular file, not a blob (the archive was tampered with)", true));
  EXPECT_EQ(call(tools, "search", {{"pattern", "x"}, {"receipt", r[0]}}),
            text_result(loose + ": is not a regular file, not a blob (the archive was tampered with)", true));
  fs::remove(loose);
  // Bytes that are neither JSON nor UTF-8.
  auto raw = archive_blobs(archive, {std::string("\xff\xfe binary")});
  EXPECT_EQ(call(tools, "restore", {{"receipt", raw[0]}}),
            text_result(raw[0] + " holds bytes that are not UTF-8 text: `compactor restore` with this receipt gives them", true));
  // A folder every user can write: refused at every call, even for a blob read before.
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[1]}}), text_result("other"));
  fs::permissions(archive, fs::perms::all);
  EXPECT_EQ(call(tools, "restore", {{"receipt", r[1]}}),
            text_result("refused: the archive " + archive.string() + " is writable by every user (mode 0777), who could plant or "
                        "remove blobs; run chmod o-w on it or use a folder of your own",
                        true));
  fs::permissions(archive, fs::perms::owner_all);
  // No folder yet.
  mcp::ArchiveTools nowhere((dir / "none").string());
  EXPECT_EQ(call(nowhere, "restore", {{"receipt", unknown}}),
            text_result("no archive at " + (dir / "none").string() + " yet: nothing has been archived there (this server reads "
                        "the archive.dir that compactor serve writes)",
                        true));
}

// The tools through the server, as a client sees them.
TEST(McpArchiveTools, TheServerListsAndCallsBoth) {
  test::ScratchFolder dir("mcp-server");
  auto r = archive_blobs(dir / "a", {"\"hello\""});
  mcp::ArchiveTools tools((dir / "a").string());
  const McpServer server(mcp::ServerInfo{"compactor", "Compactor archive", "1", ""}, tools.tools());
  McpSession session = initialized(server);
  json::value list = answer(server, session, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  const json::array& listed = list.at("result").at("tools").as_array();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].at("name"), "restore");
  EXPECT_EQ(listed[0].at("inputSchema").at("required"), json::parse(R"(["receipt"])"));
  EXPECT_EQ(listed[1].at("name"), "search");
  EXPECT_EQ(listed[1].at("inputSchema").at("required"), json::parse(R"(["pattern","receipt"])"));
  EXPECT_EQ(answer(server, session,
                   R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"restore","arguments":{"receipt":")" + r[0] + R"("}}})"),
            json::parse(R"({"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}})"));
}

// ---- the stdio transport ---------------------------------------------------------------------

// What serve_stdio writes for `input`, fed through a pipe by another thread.
std::string over_stdio(const McpServer& server, const std::string& input) {
  int in[2], out[2];
  EXPECT_EQ(::pipe(in), 0);
  EXPECT_EQ(::pipe(out), 0);
  std::thread writer([&] {
    std::string_view rest = input;
    while (!rest.empty()) {
      ssize_t n = ::write(in[1], rest.data(), std::min<std::size_t>(rest.size(), 7919));  // odd chunks
      if (n <= 0) break;
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    ::close(in[1]);
  });
  std::string output;
  std::thread reader([&] {
    char buffer[4096];
    for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) output.append(buffer, static_cast<std::size_t>(n));
  });
  EXPECT_EQ(mcp::serve_stdio(server, in[0], out[1]), mcp::StdioEnd::input_closed);
  ::close(out[1]);
  writer.join();
  reader.join();
  ::close(in[0]);
  ::close(out[0]);
  return output;
}

TEST(McpStdio, OneMessageALineEachAnswerOnALine) {
  const McpServer server = echo_server();
  const std::string overlong = R"({"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":")" + std::string(3 << 20, 'x') + "\"}}";
  const std::string input = initialize_request("2025-06-18") + "\n" + R"({"jsonrpc":"2.0","method":"notifications/initialized"})" +
                            "\n\n  \r\n" + overlong + "\n" + R"({"jsonrpc":"2.0","id":2,"method":"ping"})" + "\r\n" + "oops\n" +
                            R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"t":"a\nb"}}})";
  const std::string output = over_stdio(server, input);
  std::vector<json::value> lines;
  for (std::size_t at = 0, nl; (nl = output.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(json::parse(std::string_view(output).substr(at, nl - at)));
  ASSERT_EQ(lines.size(), 5u) << output;  // no answer to the notification or the blank lines
  EXPECT_EQ(lines[0].at("result").at("protocolVersion"), "2025-06-18");
  EXPECT_EQ(lines[1], error_response(nullptr, -32600, "Invalid Request: a message is at most 1048576 bytes"));
  EXPECT_EQ(lines[2], json::parse(R"({"jsonrpc":"2.0","id":2,"result":{}})"));
  EXPECT_EQ(lines[3].at("error").at("code"), -32700);
  // The last message, without its newline, is answered; its text's line break stays escaped.
  EXPECT_EQ(lines[4].at("result").at("content").at(0).at("text"), R"({"t":"a\nb"})");
  EXPECT_EQ(output.back(), '\n');
}

// ---- compactor mcp ---------------------------------------------------------------------------

TEST(McpCommand, TheArchiveMustBeAbsoluteTrustedAndAFolder) {
  test::ScratchFolder dir("mcp-command");
  auto usage = test::run_cli({"mcp"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_EQ(usage.err.substr(0, usage.err.find('\n')), "compactor mcp: give one of --config FILE and --archive DIR");
  EXPECT_EQ(test::run_cli({"mcp", "--archive", "/x", "--config", "/y"}).exit_code, 2);
  auto help = test::run_cli({"mcp", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.rfind("usage: compactor mcp (--config FILE | --archive DIR) [--tenant T | --tenant-key-env NAME]\n", 0), 0u);

  auto relative = test::run_cli({"mcp", "--archive", ".compactor/archive"});
  EXPECT_EQ(relative.exit_code, 2);
  EXPECT_EQ(relative.err,
            "compactor mcp: --archive \".compactor/archive\" is relative, and the agent starts this server in a folder of its "
            "choosing: give the absolute folder serve writes (its archive.dir, resolved against the folder serve runs in)\n");
  std::ofstream(dir / "relative.yaml") << "version: 1\nbudget: {limit: 100}\narchive: {dir: .compactor/archive}\n";
  std::ofstream(dir / "default.yaml") << "version: 1\nbudget: {limit: 100}\n";
  for (const char* config : {"relative.yaml", "default.yaml"}) {
    auto r = test::run_cli({"mcp", "--config", (dir / config).string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "compactor mcp: " + (dir / config).string() +
                         ": archive.dir \".compactor/archive\" is relative, and serve resolves it against the folder it runs "
                         "in, which this server cannot know: set an absolute archive.dir there, or give --archive with the "
                         "absolute folder serve writes\n");
  }
  std::ofstream(dir / "typed.yaml") << "version: 1\narchive:\n  dir: 12\n";
  auto typed = test::run_cli({"mcp", "--config", (dir / "typed.yaml").string()});
  EXPECT_EQ(typed.exit_code, 2);
  EXPECT_EQ(typed.err, "compactor mcp: " + (dir / "typed.yaml").string() + ":3:8: archive.dir: expected a string, got the number 12; quote it if you mean the string\n");

  std::ofstream(dir / "file") << "not a folder";
  auto file = test::run_cli({"mcp", "--archive", (dir / "file").string()});
  EXPECT_EQ(file.exit_code, 2);
  EXPECT_EQ(file.err, "compactor mcp: " + (dir / "file").string() + ": not a folder; give the archive folder serve writes\n");

  fs::create_directory(dir / "open");
  fs::permissions(dir / "open", fs::perms::all);
  auto open = test::run_cli({"mcp", "--archive", (dir / "open").string() + "/"});
  EXPECT_EQ(open.exit_code, 2);
  EXPECT_EQ(open.err, "compactor mcp: refused: the archive " + (dir / "open").string() +
                          " is writable by every user (mode 0777), who could plant or remove blobs; run chmod o-w on it or "
                          "use a folder of your own\n");
}

TEST(McpCommand, AnAbsoluteArchiveIsServedFromAnyFolder) {
  test::ScratchFolder dir("mcp-served");
  auto r = archive_blobs(dir / "archive", {"\"restored from elsewhere\""});
  std::ofstream(dir / "config.yaml") << "version: 1\nbudget: {limit: 100}\narchive: {dir: \"" + (dir / "archive").string() + "\"}\n";
  fs::create_directory(dir / "elsewhere");
  const std::string session = initialize_request("2025-11-25") + "\n" + R"({"jsonrpc":"2.0","method":"notifications/initialized"})" +
                              "\n" + R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"restore","arguments":{"receipt":")" +
                              r[0] + "\"}}}\n";
  for (const std::vector<std::string>& args : {std::vector<std::string>{"mcp", "--config", (dir / "config.yaml").string()},
                                               std::vector<std::string>{"mcp", "--archive", (dir / "archive").string()}}) {
    auto served = test::run_cli(args, session, (dir / "elsewhere").string());
    EXPECT_EQ(served.exit_code, 0) << served.err;
    EXPECT_EQ(served.err, "");  // nothing but messages on stdout, nothing to say on stderr
    ASSERT_EQ(std::count(served.out.begin(), served.out.end(), '\n'), 2) << served.out;
    json::value restored = json::parse(served.out.substr(served.out.find('\n') + 1));
    EXPECT_EQ(restored, json::parse(R"({"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"restored from elsewhere"}],"isError":false}})"));
  }
  // A folder not there yet is served (serve may not have archived anything): said on stderr.
  auto empty = test::run_cli({"mcp", "--archive", (dir / "later").string()}, "");
  EXPECT_EQ(empty.exit_code, 0);
  EXPECT_EQ(empty.err, "compactor mcp: no archive at " + (dir / "later").string() +
                           " yet; its receipts are served once serve archives there\n");
  EXPECT_EQ(empty.out, "");
}

}  // namespace
}  // namespace compactor
