#include "store/redis_client.hpp"

#include <hiredis/hiredis.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace compactor::store {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kQuietAfterFailure{1};
constexpr int kMaxRedirections = 3;

timeval to_timeval(std::int64_t ms) { return timeval{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)}; }

RedisReply convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING: out.type = RedisReply::Type::string; out.text.assign(r->str, r->len); break;
    case REDIS_REPLY_STATUS: out.type = RedisReply::Type::status; out.text.assign(r->str, r->len); break;
    case REDIS_REPLY_INTEGER: out.type = RedisReply::Type::integer; out.integer = r->integer; break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::array;
      for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default: out.type = RedisReply::Type::nil;
  }
  return out;
}

// The context's error as one line.
std::string context_error(const redisContext* c) {
  if (c == nullptr) return "cannot allocate a Redis context";
  std::string what = c->errstr;
  if (c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)) what = "no answer within the time limit";
  return what.empty() ? "connection failed" : what;
}

}  // namespace

RedisClient::RedisClient(StoreConfig config) : config_(std::move(config)), node_host_(config_.host), node_port_(config_.port) {}

RedisClient::~RedisClient() { close(); }

void RedisClient::close() {
  if (context_ != nullptr) redisFree(context_);
  context_ = nullptr;
}

std::string RedisClient::where() const {
  if (!config_.socket.empty()) return "unix://" + config_.socket + "?db=" + std::to_string(config_.db);
  const bool v6 = config_.host.find(':') != std::string::npos;
  return "redis://" + (v6 ? "[" + config_.host + "]" : config_.host) + ":" + std::to_string(config_.port) + "/" + std::to_string(config_.db);
}

Expected<bool> RedisClient::connect(const std::string& host, int port) {
  close();
  const timeval limit = to_timeval(config_.timeout_ms);
  context_ = config_.socket.empty() ? redisConnectWithTimeout(host.c_str(), port, limit)
                                    : redisConnectUnixWithTimeout(config_.socket.c_str(), limit);
  if (context_ == nullptr || context_->err != 0) {
    Error e{"cannot connect: " + context_error(context_)};
    close();
    return e;
  }
  if (redisSetTimeout(context_, limit) != REDIS_OK) {
    close();
    return Error{"cannot set the time limit on the connection"};
  }
  node_host_ = host;
  node_port_ = port;
  std::vector<Command> hello;
  std::string password;
  if (!config_.password_env.empty()) {
    const char* p = std::getenv(config_.password_env.c_str());
    if (p == nullptr || *p == '\0') {
      close();
      return Error{"store.password_env names " + config_.password_env + ", which is not set"};
    }
    password = p;
    hello.push_back(config_.username.empty() ? Command{"AUTH", password} : Command{"AUTH", config_.username, password});
  }
  const std::string db = std::to_string(config_.db);
  if (config_.db != 0) hello.push_back(Command{"SELECT", db});
  if (hello.empty()) return true;
  auto answered = exchange(hello);
  if (!answered) {
    close();
    return answered.error();
  }
  return true;
}

Expected<std::vector<RedisReply>> RedisClient::exchange(const std::vector<Command>& commands) {
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const Command& command : commands) {
    argv.clear();
    lengths.clear();
    for (std::string_view arg : command) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    if (redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data()) != REDIS_OK)
      return Error{context_error(context_)};
  }
  std::vector<RedisReply> replies;
  std::string first_error;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) return Error{context_error(context_)};
    auto* reply = static_cast<redisReply*>(raw);
    if (reply->type == REDIS_REPLY_ERROR && first_error.empty()) first_error.assign(reply->str, reply->len);
    replies.push_back(convert(reply));
    freeReplyObject(reply);
  }
  if (!first_error.empty()) return Error{"the server answered: " + first_error};
  return replies;
}

Expected<std::vector<RedisReply>> RedisClient::run(const std::vector<Command>& commands) {
  if (Clock::now() < quiet_until_) return Error{last_error_};
  auto fail = [&](const std::string& what) {
    close();
    last_error_ = where() + ": " + what;
    quiet_until_ = Clock::now() + kQuietAfterFailure;
    return Error{last_error_};
  };
  for (int redirections = 0;; ++redirections) {
    if (context_ == nullptr)
      if (auto connected = connect(node_host_, node_port_); !connected) return fail(connected.error().message);
    auto replies = exchange(commands);
    if (replies) return replies;
    const std::string& what = replies.error().message;
    // "MOVED <slot> <host>:<port>": the cluster's node for this hash tag is another.
    constexpr std::string_view kMoved = "the server answered: MOVED ";
    if (what.starts_with(kMoved) && redirections < kMaxRedirections && config_.socket.empty()) {
      std::string_view to = std::string_view(what).substr(kMoved.size());
      to.remove_prefix(std::min(to.size(), to.find(' ') + 1));
      const std::size_t colon = to.rfind(':');
      if (colon != std::string_view::npos) {
        node_host_ = std::string(to.substr(0, colon));
        node_port_ = std::atoi(std::string(to.substr(colon + 1)).c_str());
        close();
        continue;
      }
    }
    // A reply of type error leaves the connection usable; an I/O error does not.
    if (context_ != nullptr && context_->err == 0 && what.starts_with("the server answered: ")) {
      last_error_ = where() + ": " + what;
      return Error{last_error_};
    }
    return fail(what);
  }
}

}  // namespace compactor::store
