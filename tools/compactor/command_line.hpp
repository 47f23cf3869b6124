// A small, strict argument parser for the subcommands: every option is declared, unknown ones are
// errors, and `--name value` and `--name=value` both work.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compactor/conversation.hpp"
#include "compactor/error.hpp"

namespace compactor::cli {

struct OptionSpec {
  std::string name;      // without the dashes
  bool takes_value = true;
  bool repeatable = false;
};

struct ParsedArgs {
  std::map<std::string, std::vector<std::string>> options;
  std::vector<std::string> positional;
  bool help = false;

  std::optional<std::string> get(const std::string& name) const;
  bool has(const std::string& name) const { return options.count(name) != 0; }
};

// Reads a conversation for a command: `format` auto (or unset) detects it; Claude Code logs and
// OpenAI histories are imported (a line on stderr says what the import did). Errors name the file.
Expected<Conversation> read_input(const std::string& path, const std::optional<std::string>& format);

// Parses argv[first..]; on error returns a one-line message in `error`.
std::optional<ParsedArgs> parse_args(int argc, char** argv, int first, const std::vector<OptionSpec>& specs,
                                     std::string& error);

}  // namespace compactor::cli
