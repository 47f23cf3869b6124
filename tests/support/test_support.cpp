#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <spawn.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

extern char** environ;

namespace compactor::test {

std::string data_path(const std::string& name) { return std::string(COMPACTOR_TEST_DATA_DIR) + "/" + name; }

ScratchFolder::ScratchFolder(const std::string& name)
    : path_(std::filesystem::temp_directory_path() / ("compactor-" + name + "-" + std::to_string(::getpid()))) {
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchFolder::~ScratchFolder() {
  std::error_code ignored;  // a destructor must not throw; a folder already gone is fine
  std::filesystem::remove_all(path_, ignored);
}

std::filesystem::path scratch_folder_until_exit(const std::string& name) {
  struct Registry {
    std::mutex mutex;
    std::vector<std::filesystem::path> paths;
    pid_t owner = ::getpid();  // a forked child that calls exit() must not remove its parent's folders
    ~Registry() {
      if (::getpid() != owner) return;
      std::error_code ignored;
      for (const auto& p : paths) std::filesystem::remove_all(p, ignored);
    }
  };
  static Registry registry;
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("compactor-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  std::lock_guard lock(registry.mutex);
  registry.paths.push_back(path);
  return path;
}

std::optional<std::string> skip_is_a_failure_here(const std::string& what, const std::string& opt_out) {
  const char* ci = std::getenv("CI");
  if (ci == nullptr || std::string(ci) != "true" || std::getenv(opt_out.c_str()) != nullptr) return std::nullopt;
  return what + ", and CI=true: in CI this check must run (set " + opt_out + "=1 to say this CI cannot make it)";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> ready_pipeline_configs() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(COMPACTOR_CONFIGS_DIR))
    if (e.path().extension() == ".yaml" && e.path().filename() != "prices.yaml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> real_session_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(COMPACTOR_TEST_DATA_DIR)) {
    std::string name = e.path().filename().string();
    if (name.rfind("cc-", 0) == 0 && e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Conversation parse_or_die(const std::string& json) {
  auto c = read_conversation(json);
  if (!c) throw std::runtime_error("fixture does not parse: " + c.error().message);
  return std::move(c).value();
}

Conversation load_or_die(const std::string& path) {
  auto c = read_conversation_file(path);
  if (!c) throw std::runtime_error("fixture does not parse: " + c.error().message);
  return std::move(c).value();
}

MessagePtr message_or_die(boost::json::object object) {
  auto m = Message::from_json(std::move(object));
  if (!m) throw std::runtime_error("fixture message invalid: " + m.error().message);
  return std::move(m).value();
}

MessagePtr message_or_die(const std::string& json) { return message_or_die(boost::json::parse(json).as_object()); }

namespace {

CommandResult spawn(const std::string& program, const std::vector<std::string>& args, int in_fd, const std::string& cwd) {
  char out_name[] = "/tmp/compactor-test-out-XXXXXX";
  char err_name[] = "/tmp/compactor-test-err-XXXXXX";
  int out_fd = mkstemp(out_name), err_fd = mkstemp(err_name);

  std::vector<std::string> argv_storage = {program};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  CommandResult result;
  if (rc == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  close(out_fd);
  close(err_fd);
  result.out = read_file(out_name);
  result.err = read_file(err_name);
  std::remove(out_name);
  std::remove(err_name);
  return result;
}

}  // namespace

CommandResult run_cli(const std::vector<std::string>& args, const std::string& stdin_text, const std::string& cwd) {
  return run_program(COMPACTOR_CLI, args, stdin_text, cwd);
}

CommandResult run_program(const std::string& program, const std::vector<std::string>& args, const std::string& stdin_text,
                          const std::string& cwd) {
  char in_name[] = "/tmp/compactor-test-in-XXXXXX";
  int in_fd = mkstemp(in_name);
  if (write(in_fd, stdin_text.data(), stdin_text.size()) != static_cast<ssize_t>(stdin_text.size()))
    throw std::runtime_error("cannot write stdin file");
  lseek(in_fd, 0, SEEK_SET);
  CommandResult result = spawn(program, args, in_fd, cwd);
  close(in_fd);
  std::remove(in_name);
  return result;
}

CommandResult run_cli_stdin_from(const std::vector<std::string>& args, const std::string& stdin_path, const std::string& cwd) {
  int in_fd = open(stdin_path.c_str(), O_RDONLY);
  if (in_fd < 0) throw std::runtime_error("cannot open " + stdin_path);
  CommandResult result = spawn(COMPACTOR_CLI, args, in_fd, cwd);
  close(in_fd);
  return result;
}

}  // namespace compactor::test
