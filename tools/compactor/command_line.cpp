#include "command_line.hpp"

#include "host/exit_code.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace compactor::cli {

std::string with_input_forms(std::string_view help, wire::FormUse use) {
  std::string names;
  for (const std::string& n : wire::input_format_names(use)) names += (names.empty() ? "" : "|") + n;
  // A line per form, its description's words wrapped at 100 columns.
  std::string forms;
  for (const wire::WireFormat* f : wire::wire_formats())
    for (const wire::InputForm* form : f->input_forms()) {
      if (use == wire::FormUse::sessions && !form->imports_sessions()) continue;
      std::string line = fmt::format("                     {:<12}", form->name());
      const std::string_view said = form->description();
      for (std::size_t at = 0; at < said.size();) {
        const std::size_t end = std::min(said.find(' ', at), said.size());
        if (line.size() + 1 + (end - at) > 100 && line.size() > 34) {
          forms += line + "\n";
          line = std::string(33, ' ');
        }
        line += " " + std::string(said.substr(at, end - at));
        at = end + 1;
      }
      forms += line + "\n";
    }
  std::string out(help);
  for (auto [marker, text] : {std::pair<std::string_view, std::string>{"@INPUT_FORMAT@\n", "  --input-format " + names + "\n"},
                              std::pair<std::string_view, std::string>{"@INPUT_FORMS@\n", forms}})
    if (std::size_t at = out.find(marker); at != std::string::npos) out.replace(at, marker.size(), text);
  return out;
}

Expected<wire::InputDocument> read_input(const std::string& path, const std::optional<std::string>& format) {
  auto doc = wire::read_input_document(path, format);
  if (doc && !doc->imported.empty()) fmt::print(stderr, "{}\n", doc->imported);
  return doc;
}

namespace {

struct FileId {
  dev_t dev;
  ino_t ino;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> file_id(const std::string& path, bool stdin_for_dash) {
  struct stat st {};
  if (path == "-") {
    if (!stdin_for_dash || ::fstat(STDIN_FILENO, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  } else if (::stat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return FileId{st.st_dev, st.st_ino};
}

}  // namespace

std::optional<std::string> overwrite_conflict(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& out = outputs[i];
    if (out.path == "-") {
      // Two documents on one stream would be neither: refused like two outputs to one file.
      for (std::size_t j = 0; j < i; ++j)
        if (outputs[j].path == "-")
          return outputs[j].role + " and " + out.role + " both name stdout (-); give one of them a file";
      continue;
    }
    std::optional<FileId> id = file_id(out.path, false);
    for (const NamedPath& in : inputs)
      if (id && id == file_id(in.path, true)) return out.path + ": refusing to overwrite " + in.role;
    for (std::size_t j = 0; j < i; ++j) {
      if (outputs[j].path == "-") continue;
      std::error_code a, b;
      bool same = id ? id == file_id(outputs[j].path, false)
                     : std::filesystem::weakly_canonical(std::filesystem::absolute(out.path), a) ==
                           std::filesystem::weakly_canonical(std::filesystem::absolute(outputs[j].path), b);
      if (same) return out.path + ": " + outputs[j].role + " and " + out.role + " name the same file";
    }
  }
  return std::nullopt;
}

int Command::usage_error(const std::string& what) const {
  fmt::print(stderr, "compactor {}: {}\n{}", name, what, help);
  return kExitBadInput;
}

std::optional<ParsedArgs> Command::parse(int argc, char** argv, int first, const std::vector<OptionSpec>& specs,
                                         int& exit_code) const {
  std::string error;
  auto args = parse_args(argc, argv, first, specs, error);
  if (!args) {
    exit_code = usage_error(error);
    return std::nullopt;
  }
  if (args->help) {
    fmt::print("{}", help);
    exit_code = kExitOk;
    return std::nullopt;
  }
  return args;
}

std::optional<std::string> required_option(const ParsedArgs& args, const std::string& name, std::string& error) {
  auto value = args.get(name);
  if (!value)
    error = "--" + name + " is required";
  else if (!args.positional.empty())
    error = "unexpected argument " + args.positional.front();
  else
    return value;
  return std::nullopt;
}

std::optional<std::string> ParsedArgs::get(const std::string& name) const {
  auto it = options.find(name);
  if (it == options.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::optional<ParsedArgs> parse_args(int argc, char** argv, int first, const std::vector<OptionSpec>& specs,
                                     std::string& error) {
  ParsedArgs out;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      out.help = true;
      continue;
    }
    if (arg.size() < 3 || arg.rfind("--", 0) != 0) {
      out.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const OptionSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == name) spec = &s;
    if (spec == nullptr) {
      error = "unknown option --" + name;
      return std::nullopt;
    }
    if (!spec->takes_value) {
      if (value) {
        error = "option --" + name + " takes no value";
        return std::nullopt;
      }
      out.options[name].push_back("");
      continue;
    }
    if (!value) {
      if (i + 1 >= argc) {
        error = "option --" + name + " needs a value";
        return std::nullopt;
      }
      value = argv[++i];
    }
    if (!spec->repeatable && out.options.count(name)) {
      error = "option --" + name + " given twice";
      return std::nullopt;
    }
    out.options[name].push_back(*value);
  }
  return out;
}

}  // namespace compactor::cli
