// The MCP server's reader: the bytes are a session, one JSON-RPC message a line, handled in turn
// by one server over a small archive (a tool result, one with an image, a snapshot naming the
// first), and then a blob read back as the model sees it. The server never throws, and every
// answer is one line of JSON: a JSON-RPC 2.0 response with an id and exactly one of result and
// error, the error's code one JSON-RPC defines; notifications and responses get none. The blob's
// view counts its code points right, and its images are anchored in order inside its text.
#include "fuzz_check.hpp"

#include "archive/archive_store.hpp"
#include "compactor/size_unit.hpp"
#include "mcp/archive_tools.hpp"
#include "mcp/blob_view.hpp"
#include "mcp/mcp_server.hpp"

#include <boost/json.hpp>

#include <cstdint>
#include <memory>

namespace {

namespace json = boost::json;
using namespace compactor;

// The archive, written once; the seeds name these blobs' receipts.
const mcp::McpServer& server() {
  static FuzzScratch dir("mcp-fuzz");
  static std::unique_ptr<mcp::ArchiveTools> tools;
  static std::unique_ptr<mcp::McpServer> instance;
  if (!instance) {
    ArchiveStore store(dir.path());
    const char* blobs[] = {
        R"("line one\nline two: needle")",
        R"([{"type":"text","text":"a screenshot"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}])",
        R"({"role":"user","content":"the result sha256:bdcf549c8a0056e2af2de7fb6513af166f336ef23a5158371cdaf37e40a2d258 was masked; needle"}
)",  // a line of a JSONL log: the newline is part of the blob
    };
    for (const char* b : blobs) FUZZ_CHECK(store.put(b).ok(), "cannot archive a fixture blob");
    FUZZ_CHECK(store.commit().ok(), "cannot commit the fixture archive");
    tools = std::make_unique<mcp::ArchiveTools>(dir.path());
    instance = std::make_unique<mcp::McpServer>(mcp::ServerInfo{"compactor", "Compactor archive", "0", "fuzz"}, tools->tools());
  }
  return *instance;
}

void check_response(const std::string& out) {
  FUZZ_CHECK(out.find('\n') == std::string::npos, "a response spans lines: " + out.substr(0, 200));
  boost::system::error_code ec;
  json::value v = json::parse(out, ec);
  FUZZ_CHECK(!ec && v.is_object(), "a response is not a JSON object: " + out.substr(0, 200));
  const json::object& o = v.get_object();
  FUZZ_CHECK(o.contains("jsonrpc") && o.at("jsonrpc") == "2.0", "a response without jsonrpc 2.0");
  FUZZ_CHECK(o.contains("id"), "a response without an id");
  FUZZ_CHECK(o.contains("result") != o.contains("error"), "a response needs exactly one of result and error");
  if (const json::value* e = o.if_contains("error")) {
    const json::value* code = e->is_object() ? e->get_object().if_contains("code") : nullptr;
    FUZZ_CHECK(code != nullptr && code->is_int64(), "an error without an integer code");
    const std::int64_t c = code->get_int64();
    FUZZ_CHECK(c == -32700 || c == -32600 || c == -32601 || c == -32602 || c == -32603, "an error code JSON-RPC does not define");
    FUZZ_CHECK(e->get_object().contains("message") && e->get_object().at("message").is_string(), "an error without a message");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const mcp::McpServer& s = server();
  mcp::McpSession session;
  for (std::size_t start = 0; start < bytes.size();) {
    std::size_t nl = bytes.find('\n', start);
    std::string_view line = bytes.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    if (std::optional<std::string> out = s.handle(line, session)) check_response(*out);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }

  auto view = mcp::BlobView::of(bytes);
  if (!view) {
    FUZZ_CHECK(!view.error().message.empty(), "a refusal without a message");
    return 0;
  }
  FUZZ_CHECK(count_code_points(view->text()) == view->chars(), "the view miscounts its code points");
  FUZZ_CHECK(view->byte_at(view->chars()) == view->text().size(), "the end of the view is not at its last byte");
  FUZZ_CHECK(view->byte_at(view->chars() / 2) <= view->text().size(), "an offset past the view");
  std::uint64_t previous = 0;
  for (const mcp::BlobImage& image : view->images()) {
    FUZZ_CHECK(image.at >= previous && image.at < view->chars(), "an image anchored out of order or outside the text");
    FUZZ_CHECK(view->text().compare(view->byte_at(image.at), 7, "[image ") == 0 || view->kind() == mcp::BlobView::Kind::messages,
               "a tool result's image is not at its placeholder");
    previous = image.at;
  }
  return 0;
}
