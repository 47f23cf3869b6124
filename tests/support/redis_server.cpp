#include "support/redis_server.hpp"

#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <thread>

namespace compactor::test {
namespace {

unsigned short free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  unsigned short port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

RedisServer::RedisServer(std::vector<std::string> options) : options_(std::move(options)) {
  dir_ = scratch_folder_until_exit("redis");
  // The secret serve signs its continuity state with (store.state_secret_file).
  std::FILE* secret = std::fopen(secret_file().c_str(), "w");
  if (secret != nullptr) {
    std::fputs("test-state-secret-of-this-redis\n", secret);
    std::fclose(secret);
  }
  port_ = free_port();
  if (!start()) {
    ADD_FAILURE() << "redis-server did not start on 127.0.0.1:" << port_ << " (install it: bash tools/setup.sh --tests)";
    port_ = 0;
  }
}

std::string RedisServer::store_yaml(const std::string& extra) const {
  return "store: {kind: redis, url: \"" + url() + "\", state_secret_file: \"" + secret_file() + "\"" + (extra.empty() ? "" : ", " + extra) +
         "}\n";
}

std::string RedisServer::secret_file() const { return (dir_ / "state.secret").string(); }

bool RedisServer::start() {
  const std::string port = std::to_string(port_);
  std::vector<std::string> args{"redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", dir_.string(),
                                "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no",
                                "--logfile", (dir_ / "redis.log").string()};
  args.insert(args.end(), options_.begin(), options_.end());
  pid_ = ::fork();
  if (pid_ == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp("redis-server", argv.data());
    ::_exit(127);
  }
  // Ready once it answers PING (a few ms; bounded at 10 s).
  for (int i = 0; i < 200; ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    if (cli({"PING"}) == "PONG\n") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void RedisServer::kill_hard() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

bool RedisServer::restart() {
  stop();
  return start();
}

std::string RedisServer::cli(const std::vector<std::string>& command) const {
  std::string line = "timeout 5 redis-cli -p " + std::to_string(port_);
  for (const auto& c : command) line += " " + shell_quote(c);
  line += " 2>/dev/null";
  FILE* p = ::popen(line.c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

}  // namespace compactor::test
