#include "support/loopback_http_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <stdexcept>

namespace compactor::test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

int bind_loopback(unsigned short& port, const std::string& host) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) throw std::runtime_error("not an IPv4 address: " + host);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("bind failed");
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

LoopbackHttpServer::LoopbackHttpServer(std::vector<ScriptedResponse> script, std::string host, bool keep_alive)
    : script_(std::move(script)), host_(std::move(host)), keep_alive_(keep_alive) {
  listen_fd_ = bind_loopback(port_, host_);
  if (::listen(listen_fd_, 16) != 0) throw std::runtime_error("listen failed");
  thread_ = std::thread([this] { serve(); });
}

LoopbackHttpServer::~LoopbackHttpServer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  // Wake a blocked accept() without touching the socket from two threads.
  ::shutdown(listen_fd_, SHUT_RDWR);
  thread_.join();
  ::close(listen_fd_);
}

std::vector<RecordedRequest> LoopbackHttpServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void LoopbackHttpServer::serve() {
  asio::io_context io;
  std::size_t served = 0;
  for (;;) {
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;  // shut down
    {
      std::lock_guard lock(mutex_);
      if (stopping_) {
        ::close(fd);
        return;
      }
      ++connections_;
    }
    tcp::socket socket(io);
    socket.assign(tcp::v4(), fd);
    beast::flat_buffer buffer;
    while (answer(socket, buffer, served++)) {
    }
    beast::error_code ec;
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }
}

// Reads one request and answers it; true when the connection stays open for the next one.
bool LoopbackHttpServer::answer(tcp::socket& socket, beast::flat_buffer& buffer, std::size_t served) {
  http::request<http::string_body> request;
  beast::error_code ec;
  http::read(socket, buffer, request, ec);
  if (ec) return false;
  RecordedRequest recorded;
  recorded.method = std::string(request.method_string());
  recorded.target = std::string(request.target());
  for (const auto& field : request) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    recorded.headers[name] = std::string(field.value());
  }
  recorded.body = request.body();
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(std::move(recorded));
  }
  ScriptedResponse scripted = served < script_.size() ? script_[served] : ScriptedResponse{500, {}, "{\"error\":\"unscripted request\"}", {}};
  if (scripted.delay.count() > 0) std::this_thread::sleep_for(scripted.delay);
  if (scripted.before_answer) scripted.before_answer();
  if (!scripted.raw.empty()) {
    asio::write(socket, asio::buffer(scripted.raw), ec);
    return false;
  }
  const bool again = keep_alive_ && request.keep_alive();
  if (!scripted.chunks.empty()) {
    http::response<http::empty_body> head{static_cast<http::status>(scripted.status), 11};
    head.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : scripted.headers) head.set(name, value);
    head.keep_alive(again);
    head.chunked(true);
    http::response_serializer<http::empty_body> serializer{head};
    http::write_header(socket, serializer, ec);
    for (std::size_t i = 0; i < scripted.chunks.size() && !ec; ++i) {
      asio::write(socket, http::make_chunk(asio::buffer(scripted.chunks[i])), ec);
      if (i == 0 && scripted.between_chunks) scripted.between_chunks();
    }
    if (!ec) asio::write(socket, http::make_chunk_last(), ec);
    return again && !ec;
  }
  http::response<http::string_body> response{static_cast<http::status>(scripted.status), 11};
  response.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : scripted.headers) response.set(name, value);
  response.keep_alive(again);
  response.body() = scripted.body;
  response.prepare_payload();
  http::write(socket, response, ec);
  return again && !ec;
}

std::size_t LoopbackHttpServer::connections() const {
  std::lock_guard lock(mutex_);
  return connections_;
}

unsigned short refused_port() {
  unsigned short port = 0;
  int fd = bind_loopback(port, "127.0.0.1");
  ::close(fd);
  return port;
}

std::string anthropic_reply(const std::string& text, const std::string& stop_reason, int input_tokens, int output_tokens) {
  namespace json = boost::json;
  return json::serialize(json::object{
      {"id", "msg_test"},
      {"type", "message"},
      {"role", "assistant"},
      {"model", "claude-sonnet-4-5-20250929"},
      {"content", json::array{json::object{{"type", "text"}, {"text", text}}}},
      {"stop_reason", stop_reason},
      {"usage", json::object{{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}});
}

std::string openai_reply(const std::string& text, const std::string& finish_reason, int prompt_tokens, int completion_tokens) {
  namespace json = boost::json;
  return json::serialize(json::object{
      {"id", "chatcmpl-test"},
      {"object", "chat.completion"},
      {"choices", json::array{json::object{{"index", 0},
                                           {"message", json::object{{"role", "assistant"}, {"content", text}}},
                                           {"finish_reason", finish_reason}}}},
      {"usage", json::object{{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}}}});
}

}  // namespace compactor::test
