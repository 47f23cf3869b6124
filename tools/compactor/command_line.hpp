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
#include "wire/input_document.hpp"

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

// Reads a conversation for a command (wire/input_document.hpp): `format` auto (or unset) detects
// it; a log is imported (a line on stderr says what the import did). Errors name the file.
Expected<wire::InputDocument> read_input(const std::string& path, const std::optional<std::string>& format);

// A file a command reads or writes, with how its error line names it ("the input", "--report").
struct NamedPath {
  std::string role;
  std::string path;
};

// The one-line reason an output may not be written, if any: it is one of the inputs (same device
// and inode, so links and other spellings count; "-" as an input is the file stdin was redirected
// from), or two outputs are the same file.
std::optional<std::string> overwrite_conflict(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

// Parses argv[first..]; on error returns a one-line message in `error`.
std::optional<ParsedArgs> parse_args(int argc, char** argv, int first, const std::vector<OptionSpec>& specs,
                                     std::string& error);

// A command's help with the forms of input the wire formats list: `@INPUT_FORMAT@` becomes the
// option's line (`--input-format auto|anthropic|…`), `@INPUT_FORMS@` one line per form saying
// what it is. `use` says which forms the command reads.
std::string with_input_forms(std::string_view help, wire::FormUse use = wire::FormUse::requests);

// A subcommand's name and help: how every command parses its arguments and reports misuse.
struct Command {
  std::string_view name;  // "count", "archive gc"
  std::string help;

  // Prints "compactor NAME: what" and the help on stderr; returns the bad-input exit code.
  int usage_error(const std::string& what) const;
  // Parses argv[first..]. nullopt means the command is done, and `exit_code` says how: the help
  // was printed (0), or a parse error with the help (2).
  std::optional<ParsedArgs> parse(int argc, char** argv, int first, const std::vector<OptionSpec>& specs,
                                  int& exit_code) const;
};

// The value of the option `name` a command needs, with no positional argument beside it; nullopt
// with the usage error in `error` otherwise ("--NAME is required", else "unexpected argument X").
std::optional<std::string> required_option(const ParsedArgs& args, const std::string& name, std::string& error);

}  // namespace compactor::cli
