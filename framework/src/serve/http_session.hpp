// One client connection, asynchronous on its I/O thread: it reads a request's head (within
// serve.header_timeout_ms, which also bounds an idle keep-alive connection), lets the server
// refuse it before the body is read (a body over serve.max_body_bytes, a full pipeline queue, a
// target that is not a path), reads the body (within serve.body_timeout_ms), hands the request
// to the server, and writes what the server answers: a whole reply, or a stream (chunked) that
// the server feeds as the upstream's bytes arrive. A stream's writes are buffered up to a
// high-water mark; past it the server is told to stop feeding (the upstream call is paused)
// until the client has read the bytes. While a request is answered the connection is watched
// for the client's leaving (its end of the connection closed), so that a call still waiting for
// a pipeline or the upstream is given up at once, not made for nobody. A connection costs its
// socket, its buffers and no thread.
#pragma once

#include "serve/reply.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace compactor::serve {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using RequestHead = boost::beast::http::request_header<>;

class HttpSession;

// What feeds a streamed answer: told when the client has read enough to take more, and when the
// client is gone (then it stops: nothing more can be written).
class StreamFeeder {
 public:
  virtual ~StreamFeeder() = default;
  virtual void on_writable() = 0;
  virtual void on_client_gone() = 0;
};

// The server, as a connection sees it.
class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Before the body is read: a reply refuses the request (the connection is then closed, so an
  // unread body is never taken for the next request).
  virtual std::optional<Reply> screen(const RequestHead& head, std::uint64_t content_length, HttpSession& session) = 0;
  // The whole request. The handler answers through the session (reply() or a stream), now or later.
  virtual void handle(Request request, std::shared_ptr<HttpSession> session) = 0;
  // A connection opened or closed (for the open-connection count).
  virtual void connection_closed() = 0;
};

struct SessionLimits {
  std::chrono::milliseconds header_timeout{60000};  // idle keep-alive and a slow head alike
  std::chrono::milliseconds body_timeout{60000};
  std::chrono::milliseconds write_timeout{300000};  // a client that reads nothing for this long
  std::uint64_t max_body_bytes = std::uint64_t{32} << 20;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket socket, RequestHandler& handler, SessionLimits limits,
              std::function<Reply(const RequestHead&, std::string_view what)> too_large);
  ~HttpSession();

  void start();

  // The answer to the current request.
  void reply(const Reply& r);
  // A streamed answer: the head (the response is chunked; the body follows as write() calls).
  void begin_stream(int status, const Headers& headers);
  // Queues body bytes (always taken). Past the high-water mark the client is behind(): the
  // feeder should stop until on_writable().
  void write(std::string_view bytes);
  bool behind() const { return behind_; }
  void end_stream();
  // Ends the answer by closing the connection (a stream cut short, or a client gone).
  void abort();

  void set_feeder(std::weak_ptr<StreamFeeder> feeder) { feeder_ = std::move(feeder); }
  bool closed() const { return closed_; }
  // Whether any of the current answer was handed to the connection (a failure after that can
  // only cut it short).
  bool answer_begun() const { return answer_begun_; }
  bool keep_alive() const { return keep_alive_; }
  void close_after_answer() { keep_alive_ = false; }
  // After serve starts draining: the connection closes once its answer is written.
  void drain() { draining_ = true; }
  // From screen(): this request's body may be at most `bytes` (a route's own limit, below
  // serve.max_body_bytes); a chunked body past it is refused as it arrives.
  void limit_body(std::uint64_t bytes);
  // What screen() reserved for this request (a place in the pipeline queue), kept until handle()
  // takes it, and let go of with the request when it ends before (a client gone mid-body).
  void hold(std::shared_ptr<void> reservation) { reservation_ = std::move(reservation); }
  std::shared_ptr<void> take_reservation() { return std::move(reservation_); }

  boost::asio::any_io_executor executor();
  boost::asio::io_context& context() { return context_; }

 private:
  void read_head();
  bool read_ok(boost::beast::error_code ec);
  void on_head(boost::beast::error_code ec);
  void read_body();
  void on_body(boost::beast::error_code ec);
  void watch_for_close();
  void refuse(const Reply& r);
  void send(std::string bytes);
  void flush();
  void on_written(boost::beast::error_code ec);
  void answer_done();
  void linger();
  void drop_unread();
  void close();

  boost::asio::io_context& context_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  RequestHandler& handler_;
  SessionLimits limits_;
  std::function<Reply(const RequestHead&, std::string_view)> too_large_;
  std::weak_ptr<StreamFeeder> feeder_;
  std::shared_ptr<void> reservation_;
  std::uint64_t requests_ = 0;  // read so far: a close watch belongs to one request
  std::string pending_, writing_;  // bytes queued, and the bytes of the write in progress
  unsigned version_ = 11;
  bool keep_alive_ = true, head_only_ = false, chunked_ = false;
  bool answering_ = false, answer_complete_ = false, write_in_progress_ = false;
  bool closed_ = false, draining_ = false, behind_ = false, answer_begun_ = false;
};

}  // namespace compactor::serve
