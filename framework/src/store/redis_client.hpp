// A synchronous Redis client for the store: hiredis (Debian's libhiredis-dev) for the protocol
// and the socket, with a bounded time for connecting and for every reply, commands sent in one
// batch (one round trip), a connection made again after a failure, and Redis Cluster's MOVED
// redirections followed (every key of one call shares a hash tag, so one node answers it).
//
// It is made in the process that uses it and never crosses a fork: serve's workers each open
// their own after they are forked, never the zygote. Not thread-safe; one per thread.
#pragma once

#include "archive/store_config.hpp"
#include "compactor/error.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

namespace compactor::store {

struct RedisReply {
  enum class Type { string, integer, nil, status, array } type = Type::nil;
  std::string text;  // string, status
  long long integer = 0;
  std::vector<RedisReply> elements;
};

class RedisClient {
 public:
  explicit RedisClient(StoreConfig config);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  using Command = std::vector<std::string_view>;
  // Sends every command, then reads every reply. An error when the server cannot be reached,
  // does not answer in time, or answers any command with an error (its text, e.g. "OOM command
  // not allowed when used memory > 'maxmemory'"); the connection is then closed, and for a second
  // after a failure every call fails at once with the same error (a hung server costs a request
  // one time limit, not one per command).
  Expected<std::vector<RedisReply>> run(const std::vector<Command>& commands);

  // "redis://HOST:PORT/DB" or the socket's path: for messages (no password, ever).
  std::string where() const;

 private:
  Expected<bool> connect(const std::string& host, int port);
  Expected<std::vector<RedisReply>> exchange(const std::vector<Command>& commands);
  void close();

  StoreConfig config_;
  redisContext* context_ = nullptr;
  std::string node_host_;  // the node connected to (a cluster's MOVED changes it)
  int node_port_ = 0;
  std::chrono::steady_clock::time_point quiet_until_{};
  std::string last_error_;
};

}  // namespace compactor::store
