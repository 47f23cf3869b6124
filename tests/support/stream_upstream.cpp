#include "support/stream_upstream.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace compactor::test {
namespace {

bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::string chunk(const std::string& bytes) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
  return size + bytes + "\r\n";
}

// One request's head and body (by Content-Length); false when the connection ended first.
bool read_request(int fd, std::string& pending) {
  std::size_t end;
  char buf[65536];
  while ((end = pending.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    pending.append(buf, static_cast<std::size_t>(n));
  }
  std::string head = pending.substr(0, end);
  std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::size_t length = 0;
  if (auto at = head.find("\r\ncontent-length:"); at != std::string::npos) length = std::strtoull(head.c_str() + at + 17, nullptr, 10);
  while (pending.size() < end + 4 + length) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    pending.append(buf, static_cast<std::size_t>(n));
  }
  pending.erase(0, end + 4 + length);
  return true;
}

}  // namespace

std::string StreamUpstream::first_event() {
  return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":"
         "\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n";
}

std::string StreamUpstream::rest() {
  return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
         "\"text\":\"held\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
}

std::string StreamUpstream::flood_event() {
  const std::string head = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"";
  const std::string tail = "\"}}\n\n";
  return head + std::string(16384 - head.size() - tail.size(), 'f') + tail;
}

StreamUpstream::StreamUpstream(Mode mode, std::size_t flood_bytes) : mode_(mode), flood_bytes_(flood_bytes) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 512) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("cannot listen on loopback");
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

StreamUpstream::~StreamUpstream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);  // unblocks a thread in recv or send
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  for (int fd : connections_) ::close(fd);
  ::close(listen_fd_);
}

std::size_t StreamUpstream::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

bool StreamUpstream::wait_for_requests(std::size_t n, std::chrono::milliseconds limit) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, limit, [&] { return requests_ >= n; });
}

void StreamUpstream::release() {
  {
    std::lock_guard lock(mutex_);
    released_ = true;
  }
  changed_.notify_all();
}

void StreamUpstream::accept_loop() {
  for (;;) {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;  // shut down
    std::lock_guard lock(mutex_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    connections_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

void StreamUpstream::serve(int fd) {
  if (mode_ == Mode::flood) {
    // Sized before anything is sent: a reader that has the first event knows the size is set.
    int size = 64 * 1024;
    socklen_t len = sizeof size;
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    ::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &len);
    send_buffer_ = static_cast<std::size_t>(size);
  }
  std::string pending;
  while (read_request(fd, pending)) {
    std::unique_lock lock(mutex_);
    ++requests_;
    changed_.notify_all();
    if (mode_ == Mode::silent) {
      changed_.wait(lock, [&] { return stopping_; });
      return;
    }
    lock.unlock();
    if (!write_all(fd, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n") ||
        !write_all(fd, chunk(first_event())))
      return;
    if (mode_ == Mode::flood) {
      flood_written_ += first_event().size();
      const std::string event = chunk(flood_event());
      while (flood_written_.load() < flood_bytes_) {
        if (!write_all(fd, event)) return;
        flood_written_ += flood_event().size();
      }
      if (!write_all(fd, "0\r\n\r\n")) return;
      flood_done_ = true;
      continue;
    }
    lock.lock();
    changed_.wait(lock, [&] { return stopping_ || (mode_ == Mode::held && released_); });
    if (stopping_) return;
    lock.unlock();
    if (!write_all(fd, chunk(rest()) + "0\r\n\r\n")) return;
  }
}

}  // namespace compactor::test
