// Helpers shared by the test programs: reading fixtures, building messages, running the CLI.
#pragma once

#include "compactor/conversation.hpp"
#include "model/conversation_reader.hpp"

#include <boost/json.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace compactor::test {

std::string data_path(const std::string& name);   // tests/data/<name>
std::string read_file(const std::string& path);
std::vector<std::string> real_session_files();    // tests/data/cc-*.json
std::vector<std::string> ready_pipeline_configs(); // configs/*.yaml but the price table, sorted

// `<tmp>/compactor-<name>-<pid>`, made empty, and removed with all it holds when the object goes,
// so a test that fails half-way (an ASSERT returns early) leaves nothing behind in /tmp.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& name);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& child) const { return path_ / child; }
  std::string string() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// The same folder for helpers that hand out paths: made empty now, removed when the program exits
// normally (after a crash it stays, for a look).
std::filesystem::path scratch_folder_until_exit(const std::string& name);

Conversation parse_or_die(const std::string& json);
Conversation load_or_die(const std::string& path);
MessagePtr message_or_die(boost::json::object object);
MessagePtr message_or_die(const std::string& json);

// A check this machine cannot make (no mount namespace, no corpus) is skipped on a developer's
// machine, but in CI (CI=true) a skip would let a protection go untested without anyone seeing:
// there it is a failure unless `opt_out` (an environment variable) is set, which names the gap in
// the CI's own configuration. Returns the message for a failure, or nothing when a skip is fine.
std::optional<std::string> skip_is_a_failure_here(const std::string& what, const std::string& opt_out);

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs the built `compactor` with the arguments (no shell), capturing both streams.
CommandResult run_cli(const std::vector<std::string>& args, const std::string& stdin_text = "",
                      const std::string& cwd = "");
// Runs another built program (a test tool) the same way.
CommandResult run_program(const std::string& program, const std::vector<std::string>& args,
                          const std::string& stdin_text = "", const std::string& cwd = "");
// The same with stdin redirected from a file (`compactor … < stdin_path`).
CommandResult run_cli_stdin_from(const std::vector<std::string>& args, const std::string& stdin_path,
                                 const std::string& cwd = "");

}  // namespace compactor::test
