// A stand-in upstream on 127.0.0.1 (a free port) for serve's limits: every connection has a thread
// of its own (LoopbackHttpServer answers one connection at a time, so it cannot hold a hundred
// streams), and each request is answered with a Messages API event stream the test steers:
//  - held:   the head and the first event, the rest once release() is called;
//  - stall:  the head and the first event, then nothing (until the upstream is destroyed);
//  - silent: nothing at all, not even a head;
//  - flood:  the head, then events of 16 KiB totalling flood_bytes, as fast as the reader takes them,
//            through a socket whose send buffer is set small (64 KiB asked; what the kernel gave is
//            send_buffer()), so that what the upstream has written tells what its reader took.
// Bounded: it stops when destroyed (every connection shut, every thread joined). Nothing leaves
// the machine.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace compactor::test {

class StreamUpstream {
 public:
  enum class Mode { held, stall, silent, flood };
  explicit StreamUpstream(Mode mode, std::size_t flood_bytes = 0);
  ~StreamUpstream();
  StreamUpstream(const StreamUpstream&) = delete;
  StreamUpstream& operator=(const StreamUpstream&) = delete;

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Requests read so far (head and body).
  std::size_t requests() const;
  // Until `n` requests were read, or `limit` passed; whether they were.
  bool wait_for_requests(std::size_t n, std::chrono::milliseconds limit) const;
  // The held streams (and any held later) send the rest and end.
  void release();
  // The flood's bytes (event bytes, without the chunk framing) written so far, and whether all were.
  std::size_t flood_written() const { return flood_written_.load(); }
  bool flood_done() const { return flood_done_.load(); }
  // The flood connection's send buffer as the kernel sized it (0 before a flood started).
  std::size_t send_buffer() const { return send_buffer_.load(); }

  // What a held or stalled stream sends first, and what a held one sends after its release.
  static std::string first_event();
  static std::string rest();
  // The flood's events, concatenated (what a client that reads the whole stream must receive).
  static std::string flood_event();

 private:
  void accept_loop();
  void serve(int fd);

  Mode mode_;
  std::size_t flood_bytes_;
  int listen_fd_ = -1;
  unsigned short port_ = 0;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::size_t requests_ = 0;
  bool released_ = false, stopping_ = false;
  std::vector<int> connections_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
  std::atomic<std::size_t> flood_written_{0};
  std::atomic<bool> flood_done_{false};
  std::atomic<std::size_t> send_buffer_{0};
};

}  // namespace compactor::test
