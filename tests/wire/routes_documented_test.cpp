// Every route `serve` answers is in `serve --help` and in docs/serve.md's route table: the four
// conversation APIs (each wire format handles one of them), the MCP endpoint and the server's own
// health and metrics. A format added without its route documented fails here.
#include "support/test_support.hpp"

#include "wire/wire_format.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace compactor {
namespace {

struct Route {
  std::string method, path;  // a request the server answers
  std::string named;         // how the help and the table name it
};

const std::vector<Route>& routes() {
  static const std::vector<Route> list = {
      {"POST", "/v1/messages", "/v1/messages"},
      {"POST", "/v1/chat/completions", "/v1/chat/completions"},
      {"POST", "/v1/responses", "/v1/responses"},
      {"POST", "/v1beta/models/gemini-2.5-flash:generateContent", ":generateContent"},
      {"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", ":streamGenerateContent"},
      {"POST", "/mcp", "/mcp"},
      {"GET", "/healthz", "/healthz"},
      {"GET", "/metrics", "/metrics"},
      {"GET", "/dashboard", "/dashboard"},
  };
  return list;
}

std::string route_table() {
  std::istringstream doc(test::read_file(std::string(COMPACTOR_DOCS_DIR) + "/serve.md"));
  std::string table;
  for (std::string line; std::getline(doc, line);)
    if (line.rfind("| `", 0) == 0 && (line.find("POST ") != std::string::npos || line.find("GET ") != std::string::npos)) table += line + "\n";
  return table;
}

TEST(Routes, EveryWireFormatHandlesADocumentedRoute) {
  for (const wire::WireFormat* f : wire::wire_formats()) {
    bool documented = false;
    for (const Route& r : routes()) documented = documented || f->handles(r.method, r.path);
    EXPECT_TRUE(documented) << f->name() << " handles no route of this test's list: add it here, to serve --help and to docs/serve.md";
  }
}

TEST(Routes, ServeHelpAndTheRouteTableNameEveryRoute) {
  auto help = test::run_cli({"serve", "--help"});
  std::string help_text = help.out;
  for (char& c : help_text)
    if (c == '\n') c = ' ';
  const std::string table = route_table();
  ASSERT_FALSE(table.empty()) << "docs/serve.md has no route table";
  for (const Route& r : routes()) {
    EXPECT_NE(help_text.find(r.named), std::string::npos) << "serve --help does not name " << r.named;
    EXPECT_NE(table.find(r.named), std::string::npos) << "docs/serve.md's route table does not name " << r.named;
  }
}

}  // namespace
}  // namespace compactor
