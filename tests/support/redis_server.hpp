// A Redis server of a test's own: `redis-server` (Debian's, installed by tools/setup.sh --tests)
// on a free loopback port, its files in a scratch folder, stopped by the test (SIGTERM, then
// SIGKILL after a time limit) or killed hard and started again on the same port and folder (its
// append-only file brings the data back).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace compactor::test {

class RedisServer {
 public:
  // `options`: more redis-server arguments (e.g. {"--maxmemory", "1mb"}). Fails the test (and
  // leaves port() 0) when redis-server cannot be started or does not answer within 10 s.
  explicit RedisServer(std::vector<std::string> options = {});
  ~RedisServer() { stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  unsigned short port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_) + "/0"; }
  // What to put in a config: `store: {kind: redis, url: …, state_secret_file: …}` plus `extra`
  // inside the braces.
  std::string store_yaml(const std::string& extra = "") const;
  // A file holding a secret to sign continuity state with, made with the server.
  std::string secret_file() const;

  void stop();
  void kill_hard();  // SIGKILL: what an operator's kill -9 does; nothing flushed
  bool restart();    // again on the same port and folder, after stop() or kill_hard()
  // redis-cli's answer to one command (for tests that look at the keys themselves).
  std::string cli(const std::vector<std::string>& command) const;

 private:
  bool start();
  std::filesystem::path dir_;
  std::vector<std::string> options_;
  unsigned short port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace compactor::test
