// A real HTTP server on 127.0.0.1 (a free port) for tests of HTTP clients: it answers each
// connection's one request with the next scripted response and records what it received. Bounded
// by its script: it serves that many requests, answers any further one 500, and stops when
// destroyed. Nothing leaves the machine.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace compactor::test {

struct ScriptedResponse {
  ScriptedResponse(int status_ = 200, std::vector<std::pair<std::string, std::string>> headers_ = {}, std::string body_ = {},
                   std::chrono::milliseconds delay_ = std::chrono::milliseconds{0})
      : status(status_), headers(std::move(headers_)), body(std::move(body_)), delay(delay_) {}
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds delay{0};  // before answering (a slow server)
  // Called after the request is recorded, before answering (a test holds the answer back).
  std::function<void()> before_answer;
  // When not empty: the body is sent chunked, one chunk each, instead of `body` (streaming), and
  // `between_chunks` is called after the first one is sent.
  std::vector<std::string> chunks;
  std::function<void()> between_chunks;
  // When not empty: written as the whole answer, byte for byte, and the connection closed after
  // it (an answer Beast would refuse to write: an oversized or malformed head, a cut body).
  std::string raw;
};

struct RecordedRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

class LoopbackHttpServer {
 public:
  // `host`: another loopback address (127.0.0.2, say) for a test of where requests may go.
  // `keep_alive`: a connection stays open for the client's next request, as a real API's does
  // (otherwise each answer closes it).
  explicit LoopbackHttpServer(std::vector<ScriptedResponse> script, std::string host = "127.0.0.1", bool keep_alive = false);
  ~LoopbackHttpServer();
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  std::string base_url() const { return "http://" + host_ + ":" + std::to_string(port_); }
  unsigned short port() const { return port_; }
  std::vector<RecordedRequest> requests() const;
  // The connections accepted so far.
  std::size_t connections() const;

 private:
  void serve();
  bool answer(boost::asio::ip::tcp::socket& socket, boost::beast::flat_buffer& buffer, std::size_t served);

  std::vector<ScriptedResponse> script_;
  std::string host_;
  bool keep_alive_ = false;
  std::size_t connections_ = 0;
  unsigned short port_ = 0;
  int listen_fd_ = -1;
  mutable std::mutex mutex_;
  std::vector<RecordedRequest> requests_;
  bool stopping_ = false;
  std::thread thread_;
};

// A loopback port nothing listens on (bound, then closed): connecting to it is refused.
unsigned short refused_port();

// A JSON body of the Anthropic Messages API's shape.
std::string anthropic_reply(const std::string& text, const std::string& stop_reason = "end_turn",
                            int input_tokens = 1200, int output_tokens = 300);
std::string openai_reply(const std::string& text, const std::string& finish_reason = "stop", int prompt_tokens = 1200,
                         int completion_tokens = 300);

}  // namespace compactor::test
