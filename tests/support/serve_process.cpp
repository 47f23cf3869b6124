#include "support/serve_process.hpp"

#include "support/test_support.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace compactor::test {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

ServeProcess::ServeProcess(const fs::path& dir, const std::string& config, const std::string& upstream, const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& env, const std::string& listen,
                           const std::vector<std::string>& prefix)
    : err_(dir / (name + ".err")) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe");
  pid_ = ::fork();
  if (pid_ == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(127);
    ::dup2(out[1], 1);
    FILE* err = std::fopen(err_.c_str(), "w");
    if (err != nullptr) ::dup2(fileno(err), 2);
    ::close(out[0]);
    ::setenv("COMPACTOR_LOG", "info", 1);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    // The loopback stand-in answers for the Anthropic and OpenAI APIs alike; a test gives the
    // Gemini one in its config.
    std::vector<std::string> args = {COMPACTOR_CLI, "serve", "--config", config, "--listen", listen, "--upstream", upstream,
                                     "--upstream", "openai=" + upstream};
    args.insert(args.begin(), prefix.begin(), prefix.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  // The first line on stdout names the port.
  std::string line;
  for (;;) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 60000) <= 0) break;
    char c;
    if (::read(out[0], &c, 1) != 1 || c == '\n') break;
    line += c;
  }
  ::close(out[0]);
  auto at = line.find("listening on http://");
  // The port follows the address's last colon ("[::1]:8088" too).
  auto colon = at == std::string::npos ? std::string::npos : line.rfind(':', line.find(' ', at + 20));
  if (colon == std::string::npos) throw std::runtime_error("compactor serve did not start: " + line + " " + stderr_text());
  port_ = static_cast<unsigned short>(std::stoi(line.substr(colon + 1)));
}

int ServeProcess::stop() {
  if (pid_ <= 0) return exit_code_;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return exit_code_;
}

int ServeProcess::kill_hard() {
  if (pid_ <= 0) return exit_code_;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  exit_code_ = 128 + SIGKILL;
  return exit_code_;
}

void ServeProcess::signal(int sig) const { ::kill(pid_, sig); }

std::string ServeProcess::stderr_text() const { return read_file(err_.string()); }

Reply call(unsigned short port, const std::string& method, const std::string& target, const std::string& body,
           const std::vector<std::pair<std::string, std::string>>& headers) {
  return call_at("127.0.0.1", port, method, target, body, headers);
}

Reply call_at(const std::string& address, unsigned short port, const std::string& method, const std::string& target,
              const std::string& body, const std::vector<std::pair<std::string, std::string>>& headers) {
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address(address), port));
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  if (req.method() == http::verb::unknown) req.method_string(method);
  const auto ip = asio::ip::make_address(address);
  req.set(http::field::host, (ip.is_v6() ? "[" + address + "]" : address) + ":" + std::to_string(port));
  req.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1u << 30);
  http::read(socket, buffer, parser);
  Reply r;
  r.status = static_cast<int>(parser.get().result_int());
  for (const auto& f : parser.get()) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(f.value());
  }
  r.body = parser.get().body();
  return r;
}

std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (pid_t child; in >> child;) out.push_back(child);
  }
  return out;
}

double metric(const std::string& metrics, const std::string& series) {
  const std::size_t at = metrics.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stod(metrics.substr(at + series.size() + 2));
}

double metric(unsigned short port, const std::string& series) { return metric(call(port, "GET", "/metrics").body, series); }

}  // namespace compactor::test
