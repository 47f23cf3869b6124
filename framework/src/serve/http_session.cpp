#include "serve/http_session.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/core.h>

#include <sys/socket.h>

#include <cerrno>
#include <sstream>

namespace compactor::serve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// A stream's bytes waiting for the client: past the high-water mark the feeder is asked to stop,
// and below the low-water mark it is asked to go on. A few events' worth each way.
constexpr std::size_t kHighWater = 64 * 1024;
constexpr std::size_t kLowWater = 16 * 1024;
constexpr std::uint32_t kHeaderLimit = 64 * 1024;

template <class Fields>
std::string head_text(const http::header<false, Fields>& head) {
  std::ostringstream out;
  out << head;
  return out.str();
}

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket socket, RequestHandler& handler, SessionLimits limits,
                         std::function<Reply(const RequestHead&, std::string_view)> too_large)
    : context_(static_cast<asio::io_context&>(asio::query(socket.get_executor(), asio::execution::context))),
      stream_(std::move(socket)),
      handler_(handler),
      limits_(limits),
      too_large_(std::move(too_large)) {}

HttpSession::~HttpSession() { handler_.connection_closed(); }

asio::any_io_executor HttpSession::executor() { return stream_.get_executor(); }

void HttpSession::start() { read_head(); }

void HttpSession::read_head() {
  reservation_.reset();
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  parser_->body_limit(limits_.max_body_bytes);
  stream_.expires_after(limits_.header_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_head(ec); });
}

// A read that failed: a body over the limit is refused in the API's shape, anything else (a
// timeout, the client gone, bytes that are no HTTP) closes the connection. False when it failed.
bool HttpSession::read_ok(beast::error_code ec) {
  if (ec == http::error::body_limit) refuse(too_large_(parser_->get().base(), "body"));
  else if (ec) close();
  return !ec;
}

void HttpSession::on_head(beast::error_code ec) {
  if (!read_ok(ec)) return;
  const auto& head = parser_->get();
  version_ = head.version();
  keep_alive_ = head.keep_alive() && !draining_;
  head_only_ = head.method() == http::verb::head;
  chunked_ = false;
  if (auto refusal = handler_.screen(head.base(), parser_->content_length().value_or(0), *this)) {
    refuse(*refusal);
    return;
  }
  // A client that waits for "100 Continue" before it sends its body (curl does, past 1 KiB).
  if (!parser_->is_done() && beast::iequals(head[http::field::expect], "100-continue"))
    send("HTTP/1.1 100 Continue\r\n\r\n");
  read_body();
}

void HttpSession::limit_body(std::uint64_t bytes) {
  if (parser_) parser_->body_limit(std::min<std::uint64_t>(bytes, limits_.max_body_bytes));
}

void HttpSession::read_body() {
  if (parser_->is_done()) {
    on_body({});
    return;
  }
  stream_.expires_after(limits_.body_timeout);
  http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
}

void HttpSession::on_body(beast::error_code ec) {
  if (!read_ok(ec)) return;
  stream_.expires_never();
  answering_ = true;
  answer_complete_ = false;
  answer_begun_ = false;
  Request request = parser_->release();
  parser_.reset();
  // A large body passed through the read buffer: give its room back (a held stream keeps none).
  if (buffer_.size() == 0) buffer_.shrink_to_fit();
  ++requests_;
  if (buffer_.size() == 0) watch_for_close();
  handler_.handle(std::move(request), shared_from_this());
}

// A client that leaves while its request is answered closes its end: the socket turns readable
// with nothing to read. Bytes that arrive instead (a pipelined request) end the watch and are left
// for the next read; so does a client that half-closes after its request (it is taken as gone,
// as nginx takes it).
void HttpSession::watch_for_close() {
  stream_.socket().async_wait(asio::ip::tcp::socket::wait_read, [self = shared_from_this(), request = requests_](beast::error_code ec) {
    if (ec || self->closed_ || !self->answering_ || request != self->requests_) return;
    char byte;
    const ssize_t n = ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) self->close();
    else if (n < 0) self->watch_for_close();
  });
}

// A refusal before the body was read closes the connection after it: the unread body must not
// be taken for the next request.
void HttpSession::refuse(const Reply& r) {
  keep_alive_ = false;
  answering_ = true;
  reply(r);
}

void HttpSession::reply(const Reply& r) {
  http::response<http::empty_body> res{static_cast<http::status>(r.status), version_};
  if (!r.content_type.empty()) res.set(http::field::content_type, r.content_type);
  for (const auto& [k, v] : r.headers) res.set(k, v);
  res.keep_alive(keep_alive_ && !draining_);
  res.content_length(r.body.size());
  std::string bytes = head_text(res.base());
  if (!head_only_) bytes += r.body;
  answer_begun_ = true;
  answer_complete_ = true;
  send(std::move(bytes));
}

void HttpSession::begin_stream(int status, const Headers& headers) {
  http::response<http::empty_body> res{static_cast<http::status>(status), version_};
  for (const auto& [k, v] : headers) res.insert(k, v);
  // HTTP/1.0 has no chunks: the body ends when the connection closes.
  if (version_ < 11) keep_alive_ = false;
  res.keep_alive(keep_alive_ && !draining_);
  chunked_ = version_ >= 11 && !head_only_;
  if (chunked_) res.chunked(true);
  std::string bytes = head_text(res.base());
  answer_begun_ = true;
  send(std::move(bytes));
}

void HttpSession::write(std::string_view bytes) {
  if (closed_ || head_only_ || bytes.empty()) return;
  if (chunked_) pending_ += fmt::format("{:x}\r\n", bytes.size());
  pending_.append(bytes);
  if (chunked_) pending_ += "\r\n";
  flush();
  if (pending_.size() + writing_.size() > kHighWater) behind_ = true;
}

void HttpSession::end_stream() {
  if (chunked_) pending_ += "0\r\n\r\n";
  answer_complete_ = true;
  flush();
}

void HttpSession::abort() {
  feeder_.reset();  // it asked: it needs no word back
  close();
}

void HttpSession::send(std::string bytes) {
  if (closed_) return;
  pending_ += bytes;
  flush();
}

void HttpSession::flush() {
  if (closed_ || write_in_progress_) return;
  if (pending_.empty()) {
    if (answer_complete_) answer_done();
    return;
  }
  writing_.swap(pending_);
  pending_.clear();
  write_in_progress_ = true;
  stream_.expires_after(limits_.write_timeout);
  asio::async_write(stream_, asio::buffer(writing_),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_written(ec); });
}

void HttpSession::on_written(beast::error_code ec) {
  write_in_progress_ = false;
  writing_.clear();
  if (ec) {
    close();
    return;
  }
  if (behind_ && pending_.size() < kLowWater) {
    behind_ = false;
    if (auto f = feeder_.lock()) f->on_writable();  // may write() again
  }
  flush();
}

void HttpSession::answer_done() {
  answering_ = false;
  answer_complete_ = false;
  feeder_.reset();
  stream_.expires_never();
  if (!keep_alive_ || draining_) {
    linger();
    return;
  }
  read_head();
}

// Closing with unread bytes in the socket (a refused request's body) makes the kernel reset the
// connection, and the client may lose the answer it has not read yet. So the sending side is shut
// first and what the client still sends is read and dropped, for a second at most (nginx's
// lingering close).
void HttpSession::linger() {
  beast::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  stream_.expires_after(std::chrono::seconds(1));
  drop_unread();
}

void HttpSession::drop_unread() {
  buffer_.clear();
  stream_.async_read_some(buffer_.prepare(64 * 1024), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    if (ec) self->close();
    else self->drop_unread();
  });
}

void HttpSession::close() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ignored;
  stream_.socket().close(ignored);
  pending_.clear();
  if (auto f = feeder_.lock()) {
    feeder_.reset();
    f->on_client_gone();
  }
}

}  // namespace compactor::serve
