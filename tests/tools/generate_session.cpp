// compactor_generate_session --exchanges N --seed S [--output FILE]
// A test tool: a seeded generator of Claude-Code-like sessions of any size, for the tests and the
// benchmarks that need a large or a realistic input. The same seed gives the same bytes (its own
// PRNG and arithmetic, no std:: distribution, whose results differ between libraries).
#include "host/atomic_file.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

namespace json = boost::json;

constexpr const char* kHelp = R"(usage: compactor_generate_session --exchanges N --seed S [--output FILE]

Writes a realistic Claude-Code-like session as a messages array: a user prompt (short or long),
then N exchanges (an assistant message and the user message answering it). The assistant thinks
(thinking blocks), reads and edits files over a growing set of paths (an Edit mostly quotes lines
the last Read of its file returned, as an agent's does), runs commands (some fail,
with their error text), searches, sometimes calls tools in parallel, and now and then ends its
turn with text, after which the user writes a new prompt. Tool results range from a few bytes to
hundreds of KB; an image comes back now and then. The same seed gives the same bytes.

options:
  --exchanges N    assistant/user exchanges (1 to 1,000,000)
  --seed S         any unsigned number
  --output FILE    where to write ("-" or absent: stdout), atomically

exit codes: 0 written; 2 bad arguments; 3 the output could not be written.
)";

// splitmix64: small, fast, and the same everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
  bool chance(unsigned percent) { return below(100) < percent; }
  // Log-uniform between lo and hi (in powers of two, integers only): most results small, a few
  // very large.
  std::uint64_t log_between(std::uint64_t lo, std::uint64_t hi) {
    auto b_lo = static_cast<unsigned>(std::bit_width(lo)), b_hi = static_cast<unsigned>(std::bit_width(hi));
    unsigned b = b_lo + static_cast<unsigned>(below(b_hi - b_lo + 1));
    std::uint64_t base = std::uint64_t{1} << (b - 1);
    return std::clamp(base + below(base), lo, hi);
  }

 private:
  std::uint64_t state_;
};

const std::vector<std::string> kWords = {
    "the",    "build",  "config", "parser",  "request", "session", "cache",  "token",   "budget",  "test",
    "failing", "when",  "module", "import",  "value",   "return",  "error",  "handler", "server",  "client",
    "update", "schema", "field",  "missing", "should",  "check",   "path",   "output",  "input",   "merge",
    "retry",  "index",  "limit",  "stream",  "async",   "queue",   "worker", "thread",  "memory",  "latency"};
const std::vector<std::string> kDirs = {"src", "src/core", "src/api", "tests", "lib/util", "docs", "scripts", "include/app"};
const std::vector<std::string> kExts = {".py", ".ts", ".cpp", ".hpp", ".md", ".json", ".rs", ".go"};

std::string words(Rng& rng, std::uint64_t n) {
  std::string out;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (i) out += (rng.chance(8) ? ". " : " ");
    out += kWords[rng.below(kWords.size())];
  }
  return out;
}

std::string code(Rng& rng, std::uint64_t bytes) {
  std::string out;
  for (std::uint64_t line = 1; out.size() < bytes; ++line) {
    out += fmt::format("{:>6}\t{}{} {}_{} = {}({});\n", line, std::string(2 * rng.below(4), ' '),
                       rng.chance(30) ? "const" : "let", kWords[rng.below(kWords.size())], rng.below(100),
                       kWords[rng.below(kWords.size())], words(rng, rng.below(4)));
  }
  out.resize(bytes);
  return out;
}

std::string hex(Rng& rng, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += digits[rng.below(16)];
  return out;
}

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}

  json::array session(std::uint64_t exchanges) {
    json::array messages;
    messages.emplace_back(prompt());
    for (std::uint64_t e = 0; e < exchanges; ++e) {
      bool last = e + 1 == exchanges;
      // Now and then the model ends its turn with text and the user writes again.
      if (!last && e > 0 && rng_.chance(12)) {
        messages.emplace_back(json::object{{"role", "assistant"}, {"content", json::array{text_block(words(rng_, 10 + rng_.below(60)))}}});
        messages.emplace_back(prompt());
        continue;
      }
      json::array calls, results;
      std::uint64_t n = rng_.chance(20) ? 2 + rng_.below(3) : 1;  // parallel calls
      for (std::uint64_t i = 0; i < n; ++i) tool_call(calls, results);
      json::array content;
      if (rng_.chance(40))
        content.emplace_back(json::object{{"type", "thinking"}, {"thinking", words(rng_, 20 + rng_.below(200))}, {"signature", hex(rng_, 96)}});
      if (rng_.chance(50)) content.emplace_back(text_block(words(rng_, 5 + rng_.below(30))));
      for (auto& c : calls) content.emplace_back(std::move(c));
      messages.emplace_back(json::object{{"role", "assistant"}, {"content", std::move(content)}});
      messages.emplace_back(json::object{{"role", "user"}, {"content", std::move(results)}});
    }
    return messages;
  }

 private:
  static json::object text_block(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

  json::object prompt() {
    std::string text = rng_.chance(70) ? words(rng_, 4 + rng_.below(25)) : words(rng_, 150 + rng_.below(900));
    return {{"role", "user"}, {"content", json::array{text_block(std::move(text))}}};
  }

  std::string path() {
    // The set of paths grows: mostly files seen before, sometimes a new one.
    if (paths_.empty() || rng_.chance(25))
      paths_.push_back("/home/dev/project/" + kDirs[rng_.below(kDirs.size())] + "/" + kWords[rng_.below(kWords.size())] + "_" +
                       std::to_string(paths_.size()) + kExts[rng_.below(kExts.size())]);
    return paths_[rng_.below(paths_.size())];
  }

  void tool_call(json::array& calls, json::array& results) {
    std::string id = "toolu_" + hex(rng_, 24);
    std::uint64_t kind = rng_.below(100);
    json::object input;
    std::string name;
    json::value content;
    bool error = false;
    if (kind < 40) {
      name = "Read";
      std::string p = path();
      input = {{"file_path", p}};
      std::string text = code(rng_, rng_.log_between(20, 400000));
      remember_read(p, text);
      content = std::move(text);
    } else if (kind < 60) {
      name = "Edit";
      std::string p = path();
      auto [old_string, new_string] = edit_of(p);
      input = {{"file_path", p}, {"old_string", old_string}, {"new_string", new_string}};
      error = rng_.chance(10);
      content = error ? "String to replace not found in file.\nString: " + words(rng_, 6) : "The file " + p + " has been updated.";
      if (auto it = read_.find(p); !error && it != read_.end())
        if (auto at = it->second.find(old_string); at != std::string::npos) it->second.replace(at, old_string.size(), new_string);
    } else if (kind < 85) {
      name = "Bash";
      input = {{"command", (rng_.chance(50) ? "make " : "npm test -- ") + kWords[rng_.below(kWords.size())]}};
      error = rng_.chance(30);
      std::string out = code(rng_, rng_.log_between(5, 60000));
      content = error ? fmt::format("Exit code {}\nerror: {} {} failed at line {}\n{}", 1 + rng_.below(2), kWords[rng_.below(kWords.size())],
                                    kWords[rng_.below(kWords.size())], rng_.below(900), out)
                      : out;
    } else if (kind < 95) {
      name = rng_.chance(50) ? "Grep" : "Glob";
      input = {{"pattern", kWords[rng_.below(kWords.size())]}, {"path", "/home/dev/project"}};
      std::string out;
      for (std::uint64_t i = 0, n = rng_.below(30); i < n; ++i) out += path() + "\n";
      content = out.empty() ? std::string("No files found") : out;
    } else {
      name = "Screenshot";
      input = {{"url", "http://localhost:3000/" + kWords[rng_.below(kWords.size())]}};
      // A small PNG-like payload: an image counts at a fixed size whatever its bytes.
      content = json::array{json::object{{"type", "image"},
                                         {"source", json::object{{"type", "base64"}, {"media_type", "image/png"}, {"data", "iVBORw0KGgo" + hex(rng_, 2000)}}}}};
    }
    calls.emplace_back(json::object{{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", std::move(input)}});
    json::object result{{"type", "tool_result"}, {"tool_use_id", id}, {"content", std::move(content)}};
    if (error) result["is_error"] = true;
    results.emplace_back(std::move(result));
  }

  // Up to 40 lines of what the last Read of `p` returned, their line numbers cut: what an Edit of
  // the file quotes, as an agent's old_string copies the lines it read.
  void remember_read(const std::string& p, const std::string& text) {
    std::vector<std::string_view> lines;
    for (std::string_view rest = text; rest.find('\n') != std::string_view::npos; rest.remove_prefix(rest.find('\n') + 1))
      lines.push_back(rest.substr(0, rest.find('\n')));  // the last, cut line left out
    if (lines.empty()) return;
    std::string excerpt;
    for (std::size_t i = rng_.below(lines.size()), n = 0; i < lines.size() && n < 40; ++i, ++n) {
      std::string_view line = lines[i];
      line.remove_prefix(std::min(line.size(), line.find('\t') + 1));
      excerpt.append(line).append("\n");
    }
    read_[p] = std::move(excerpt);
  }

  // An Edit's old and new strings: mostly a few consecutive lines of the file as last read, one
  // of them changed; for a file not read yet, made-up code.
  std::pair<std::string, std::string> edit_of(const std::string& p) {
    auto it = read_.find(p);
    if (it == read_.end() || it->second.empty() || !rng_.chance(80))
      return {code(rng_, rng_.log_between(10, 2000)), code(rng_, rng_.log_between(10, 3000))};
    std::vector<std::string> lines;
    for (std::size_t start = 0, nl; (nl = it->second.find('\n', start)) != std::string::npos; start = nl + 1)
      lines.push_back(it->second.substr(start, nl - start));
    const std::size_t first = rng_.below(lines.size()), count = std::min<std::size_t>(lines.size() - first, 1 + rng_.below(8));
    std::string old_string, new_string;
    const std::size_t changed = first + rng_.below(count);
    for (std::size_t i = first; i < first + count; ++i) {
      old_string += (i > first ? "\n" : "") + lines[i];
      new_string += (i > first ? "\n" : "") + (i == changed ? lines[i] + " // " + words(rng_, 3) : lines[i]);
    }
    return {old_string, new_string};
  }

  Rng rng_;
  std::vector<std::string> paths_;
  std::map<std::string, std::string> read_;  // by path: what remember_read kept
};

std::optional<std::uint64_t> parse_number(const std::string& text) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoull(text);
}

int usage_error(const std::string& what) {
  fmt::print(stderr, "compactor_generate_session: {}\n{}", what, kHelp);
  return 2;
}

// The options, `--name value` or `--name=value`, each once ("help" for --help or -h); the usage
// error otherwise.
std::optional<std::map<std::string, std::string>> parse_options(int argc, char** argv, std::string& error) {
  std::map<std::string, std::string> options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options["help"];
      continue;
    }
    if (!arg.starts_with("--")) {
      error = "unexpected argument " + std::string(arg);
      return std::nullopt;
    }
    std::string name(arg.substr(2, arg.find('=') == std::string_view::npos ? std::string_view::npos : arg.find('=') - 2));
    if (name != "exchanges" && name != "seed" && name != "output") {
      error = "unknown option --" + name;
      return std::nullopt;
    }
    std::string value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      value = std::string(arg.substr(eq + 1));
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      error = "--" + name + " needs a value";
      return std::nullopt;
    }
    if (!options.emplace(name, value).second) {
      error = "--" + name + " is given twice";
      return std::nullopt;
    }
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  std::string error;
  auto options = parse_options(argc, argv, error);
  if (!options) return usage_error(error);
  if (options->count("help")) {
    fmt::print("{}", kHelp);
    return 0;
  }
  std::uint64_t exchanges = 0, seed = 0;
  auto exchanges_text = options->find("exchanges"), seed_text = options->find("seed");
  if (exchanges_text == options->end()) error = "--exchanges is required";
  else if (auto n = parse_number(exchanges_text->second); !n || *n == 0 || *n > 1000000)
    error = "--exchanges takes a number from 1 to 1000000, got \"" + exchanges_text->second + "\"";
  else if (seed_text == options->end()) error = "--seed is required";
  else if (auto s = parse_number(seed_text->second); !s) error = "--seed takes an unsigned number, got \"" + seed_text->second + "\"";
  else exchanges = *n, seed = *s;
  if (!error.empty()) return usage_error(error);

  Generator generator(seed);
  json::array messages = generator.session(exchanges);
  // One message a line: readable, and diffable.
  std::string out = "[\n";
  for (std::size_t i = 0; i < messages.size(); ++i) out += json::serialize(messages[i]) + (i + 1 < messages.size() ? ",\n" : "\n");
  out += "]\n";
  std::string path = options->count("output") ? options->at("output") : "-";
  if (path == "-") {
    fmt::print("{}", out);
    return 0;
  }
  if (auto w = compactor::write_file_atomically(path, out); !w) {
    fmt::print(stderr, "compactor_generate_session: {}\n", w.error().message);
    return 3;
  }
  return 0;
}
