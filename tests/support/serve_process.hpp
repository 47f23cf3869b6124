// `compactor serve` as a child process of a test, and a plain HTTP/1.1 call to it. The built CLI
// runs on a free loopback port (`--listen 127.0.0.1:0`; the port is read from its first line).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace compactor::test {

class ServeProcess {
 public:
  // Runs in `dir` with COMPACTOR_LOG=info and `env` added; stderr goes to <dir>/<name>.err.
  // `prefix`: a command that runs serve (an `unshare …` wrapper), its last word the shell's "$@".
  ServeProcess(const std::filesystem::path& dir, const std::string& config, const std::string& upstream,
               const std::string& name = "serve", const std::vector<std::pair<std::string, std::string>>& env = {},
               const std::string& listen = "127.0.0.1:0", const std::vector<std::string>& prefix = {});
  ~ServeProcess() { stop(); }  // SIGTERM, then waits

  int stop();
  void signal(int sig) const;
  // SIGKILL, without waiting for a drain: what an operator's `kill -9` does.
  int kill_hard();
  unsigned short port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string stderr_text() const;

 private:
  std::filesystem::path err_;
  pid_t pid_ = -1;
  unsigned short port_ = 0;
  int exit_code_ = -1;
};

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;
};

Reply call(unsigned short port, const std::string& method, const std::string& target, const std::string& body = "",
           const std::vector<std::pair<std::string, std::string>>& headers = {});
// The same to another address (`::1`), with any method and target written as given; a `host`
// header among `headers` replaces the one naming the address and port.
Reply call_at(const std::string& address, unsigned short port, const std::string& method, const std::string& target,
              const std::string& body = "", const std::vector<std::pair<std::string, std::string>>& headers = {});

// The value of an unlabelled or fully labelled series in a /metrics text (`series` as written
// there, labels and all); -1 when it is not there. The second form scrapes serve on `port`.
double metric(const std::string& metrics, const std::string& series);
double metric(unsigned short port, const std::string& series);

// The pids of a process's children (from /proc; the ones its threads started included).
std::vector<pid_t> children_of(pid_t pid);

}  // namespace compactor::test
