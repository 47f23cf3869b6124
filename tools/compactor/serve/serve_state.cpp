#include "serve_state.hpp"

#include "archive/archive_store.hpp"
#include "host/atomic_file.hpp"
#include "model/conversation_reader.hpp"
#include "model/json_scanner.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace compactor::serve {

namespace {

// The end of the JSON string starting at `i` (a quote), past its closing quote.
std::size_t skip_string(std::string_view raw, std::size_t i) {
  for (++i; i < raw.size(); ++i) {
    if (raw[i] == '\\') ++i;
    else if (raw[i] == '"') return i + 1;
  }
  return raw.size();
}

std::size_t skip_space(std::string_view raw, std::size_t i) {
  while (i < raw.size() && (raw[i] == ' ' || raw[i] == '\n' || raw[i] == '\r' || raw[i] == '\t')) ++i;
  return i;
}

// The end of the JSON value starting at `i`.
std::size_t skip_value(std::string_view raw, std::size_t i) {
  if (i >= raw.size()) return i;
  if (raw[i] == '"') return skip_string(raw, i);
  if (raw[i] == '{' || raw[i] == '[') {
    int depth = 0;
    while (i < raw.size()) {
      char c = raw[i];
      if (c == '"') {
        i = skip_string(raw, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if ((c == '}' || c == ']') && --depth == 0) return i + 1;
      ++i;
    }
    return i;
  }
  while (i < raw.size() && raw[i] != ',' && raw[i] != '}' && raw[i] != ']' && raw[i] != ' ' && raw[i] != '\n') ++i;
  return i;
}

// The message's bytes with every `"cache_control": …` member cut out, the rest byte for byte:
// what the same client sends for that message when the breakpoint has moved on. Nothing when the
// message has none.
std::optional<std::string> cut_cache_control(std::string_view raw) {
  std::string out;
  bool cut = false;
  for (std::size_t i = 0; i < raw.size();) {
    if (raw[i] != '"') {
      out += raw[i++];
      continue;
    }
    std::size_t end = skip_string(raw, i);
    std::size_t after = skip_space(raw, end);
    if (raw.substr(i, end - i) == "\"cache_control\"" && after < raw.size() && raw[after] == ':') {
      std::size_t value_end = skip_value(raw, skip_space(raw, after + 1));
      while (!out.empty() && (out.back() == ' ' || out.back() == '\n' || out.back() == '\r' || out.back() == '\t')) out.pop_back();
      if (!out.empty() && out.back() == ',') {
        out.pop_back();
      } else {
        value_end = skip_space(raw, value_end);
        if (value_end < raw.size() && raw[value_end] == ',') value_end = skip_space(raw, value_end + 1);
      }
      i = value_end;
      cut = true;
      continue;
    }
    out.append(raw.substr(i, end - i));
    i = end;
  }
  if (!cut) return std::nullopt;
  return out;
}

}  // namespace

std::vector<MessagePtr> without_cache_control(const std::vector<MessagePtr>& messages) {
  std::vector<MessagePtr> out;
  out.reserve(messages.size());
  for (const auto& m : messages) {
    std::optional<std::string> cut;
    if (m->raw().find("\"cache_control\"") != std::string_view::npos) cut = cut_cache_control(m->raw());
    if (!cut) {
      out.push_back(m);
      continue;
    }
    auto buffer = std::make_shared<const std::string>(std::move(*cut));
    auto built = Message::from_input(buffer, *buffer);
    out.push_back(built ? *built : m);
  }
  return out;
}

std::string without_cache_control(std::string_view raw) {
  if (raw.find("\"cache_control\"") == std::string_view::npos) return std::string(raw);
  std::optional<std::string> cut = cut_cache_control(raw);
  return cut ? std::move(*cut) : std::string(raw);
}

std::vector<std::string> prefix_hashes(const std::vector<MessagePtr>& stripped, const std::vector<std::string>& entries,
                                       const std::vector<std::size_t>& slots) {
  std::vector<std::string> out;
  out.reserve(stripped.size());
  std::string previous = "compactor-serve-state-1";
  std::size_t k = 0;
  for (std::size_t i = 0; i < stripped.size(); ++i) {
    // receipt_of is "sha256:<hex>"; the chain hashes the previous link and this message's hash.
    std::string link = receipt_of(previous + "\n" + receipt_of(stripped[i]->raw()));
    previous = link.substr(7);
    // A system entry after this message joins the chain marked as one (a history without any
    // hashes as it always did).
    for (; k < entries.size() && k < slots.size() && slots[k] == i + 1; ++k)
      previous = receipt_of(previous + "\nsystem\n" + receipt_of(entries[k])).substr(7);
    out.push_back(previous);
  }
  return out;
}

std::string StateStore::path_of(const std::string& hash) const { return dir_ + "/" + hash + ".json"; }

// A stored history is a messages array, or, when system entries sit among its messages,
// `{"system_slots":[…],"messages":[…]}`: the entries themselves are the request's (the prefix
// hash names them), and writing them inline could not say which ones share a slot (joined
// entries), since two side by side are refused on reading.
std::optional<StateStore::Hit> StateStore::longest(const std::vector<std::string>& hashes) const {
  for (std::size_t k = hashes.size(); k > 0; --k) {
    std::string path = path_of(hashes[k - 1]);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string text = std::move(buffer).str();
    if (text == "=") return Hit{k, {}, true, {}};
    const bool with_slots = text.starts_with(R"({"system_slots":)");
    ReadOptions options;
    options.source = path;
    options.format = with_slots ? InputFormat::request_body : InputFormat::messages_array;
    auto conversation = read_conversation(text, options);
    if (!conversation || conversation->empty()) continue;  // unreadable: as if absent (a full run follows)
    std::vector<std::size_t> slots = conversation->system_slots();  // an older file's inline entries
    if (with_slots) {  // the slots are in the frame's prefix, `{"system_slots":[…],"messages":[`
      boost::system::error_code ec;
      boost::json::value head = detail::parse_json(std::string(conversation->frame().prefix) + "]}", ec);
      const boost::json::array* list = ec ? nullptr : head.at("system_slots").if_array();
      if (list == nullptr) continue;
      for (const auto& slot : *list) {
        if (!slot.is_uint64() && !(slot.is_int64() && slot.get_int64() >= 0)) continue;
        slots.push_back(static_cast<std::size_t>(slot.to_number<std::uint64_t>()));
      }
      if (slots.size() != list->size()) continue;
    }
    return Hit{k, conversation->messages(), false, std::move(slots)};
  }
  return std::nullopt;
}

bool StateStore::put(const std::string& hash, const std::vector<MessagePtr>& sent, bool unchanged,
                     const std::vector<std::size_t>& slots) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (unchanged) return static_cast<bool>(write_file_atomically(path_of(hash), "="));
  std::string bytes;
  if (!slots.empty()) {
    bytes = R"({"system_slots":[)";
    for (std::size_t k = 0; k < slots.size(); ++k) bytes += (k > 0 ? "," : "") + std::to_string(slots[k]);
    bytes += R"(],"messages":)";
  }
  bytes += "[";
  for (std::size_t i = 0; i < sent.size(); ++i) {
    if (i > 0) bytes += ',';
    bytes.append(sent[i]->raw());
  }
  bytes += "]";
  if (!slots.empty()) bytes += "}";
  return static_cast<bool>(write_file_atomically(path_of(hash), bytes));
}

}  // namespace compactor::serve
