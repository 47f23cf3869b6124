#include "import/importers.hpp"

#include "checkers/block_members.hpp"

#include "import/codex_session.hpp"
#include "import/gemini_chat.hpp"
#include "import/import_drafts.hpp"
#include "import/json_lines.hpp"

#include "model/conversation_host.hpp"
#include "model/conversation_reader.hpp"
#include "model/field_types.hpp"
#include "model/json_scanner.hpp"
#include "platform/counted.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

namespace compactor {

namespace json = boost::json;

std::string_view to_string(ImportFormat format) {
  switch (format) {
    case ImportFormat::anthropic: return "anthropic";
    case ImportFormat::claude_code: return "claude-code";
    case ImportFormat::openai: return "openai";
    case ImportFormat::codex: return "codex";
    case ImportFormat::gemini_cli: return "gemini-cli";
  }
  return "?";
}

std::optional<ImportFormat> import_format_from_string(std::string_view text) {
  if (text == "anthropic") return ImportFormat::anthropic;
  if (text == "claude-code") return ImportFormat::claude_code;
  if (text == "openai") return ImportFormat::openai;
  if (text == "codex") return ImportFormat::codex;
  if (text == "gemini-cli") return ImportFormat::gemini_cli;
  return std::nullopt;
}

namespace {

// A message being assembled, with the input line (or message index) it came from.
struct Draft {
  Role role;
  json::array content;
  std::size_t line = 0;
  std::string id;  // assistant message.id (Claude Code)
};

bool is_type(const json::value& block, std::string_view type) {
  if (!block.is_object()) return false;
  auto it = block.get_object().find("type");
  return it != block.get_object().end() && it->value().is_string() && it->value().get_string() == type;
}

std::string string_field(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string(it->value().get_string()) : std::string();
}

std::string string_field(const json::value& v, std::string_view key) {
  return v.is_object() ? string_field(v.get_object(), key) : std::string();
}

// The start of a text for a one-line error: JSON-escaped (newlines, C0 controls), and DEL, the C1
// controls and the Unicode line and paragraph separators escaped too, cut at a character
// boundary after about `limit` bytes.
std::string one_line_excerpt(std::string_view text, std::size_t limit) {
  std::size_t cut = std::min(text.size(), limit);
  while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  std::string quoted = json::serialize(json::string(text.substr(0, cut)));
  std::string out;
  out.reserve(quoted.size());
  for (std::size_t i = 0; i < quoted.size(); ++i) {
    auto byte = [&](std::size_t k) { return k < quoted.size() ? static_cast<unsigned char>(quoted[k]) : 0u; };
    if (byte(i) == 0x7F) {
      out += "\\u007f";
    } else if (byte(i) == 0xC2 && byte(i + 1) >= 0x80 && byte(i + 1) <= 0x9F) {  // U+0080..U+009F
      out += fmt::format("\\u{:04x}", byte(i + 1));
      ++i;
    } else if (byte(i) == 0xE2 && byte(i + 1) == 0x80 && (byte(i + 2) == 0xA8 || byte(i + 2) == 0xA9)) {  // U+2028, U+2029
      out += byte(i + 2) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += quoted[i];
    }
  }
  return out + (cut < text.size() ? "…" : "");
}

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// Consecutive messages of one role become one, results first: logs split parallel calls and
// their results over several lines, and the API reads pairing per message.
std::vector<Draft> merge_turns(std::vector<Draft> in) {
  std::vector<Draft> out;
  for (Draft& d : in) {
    if (!out.empty() && out.back().role == d.role) {
      for (auto& b : d.content) out.back().content.push_back(std::move(b));
    } else {
      out.push_back(std::move(d));
    }
  }
  for (Draft& d : out) {
    if (d.role != Role::user) continue;
    std::stable_partition(d.content.begin(), d.content.end(), [](const json::value& b) { return is_type(b, "tool_result"); });
  }
  return out;
}

// A tool_use the API would refuse is made well-formed, each change counted: a missing or
// non-string name becomes "unknown_tool"; a missing input becomes {} and a non-object one is kept
// as {"value": …}; an id the API refuses (^[a-zA-Z0-9_-]+$) has its other characters replaced
// by '_' (an empty one becomes "toolu_import_<line>"), and the next message's results follow it.
bool repair_tool_uses(std::vector<Draft>& messages, ImportReport& report) {
  bool changed = false;
  // A call in a user message or a result in an assistant one is kept as text, not as a block the
  // API refuses there.
  for (Draft& d : messages)
    for (auto& b : d.content) {
      bool misplaced = d.role == Role::user ? is_type(b, "tool_use") || is_type(b, "server_tool_use") || is_type(b, "mcp_tool_use")
                                            : is_type(b, "tool_result");
      if (!misplaced) continue;
      std::string type = string_field(b, "type");
      b = json::object{{"type", "text"},
                       {"text", "[compactor import: a " + type + " block in a " + std::string(to_string(d.role)) +
                                    " message, kept as text] " + json::serialize(b)}};
      report.repairs.push_back({"misplaced_block_as_text", d.line, "a " + type + " block in a " + std::string(to_string(d.role)) + " message"});
      changed = true;
    }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role != Role::assistant) continue;
    for (auto& b : messages[i].content) {
      if (!is_type(b, "tool_use")) continue;
      json::object& o = b.as_object();
      const json::value* name = o.if_contains("name");
      if (name == nullptr || !name->is_string() || name->get_string().empty()) {
        o["name"] = "unknown_tool";
        report.repairs.push_back({"tool_use_name_missing", messages[i].line, "a tool_use without a name is now unknown_tool"});
        changed = true;
      }
      const json::value* input = o.if_contains("input");
      if (input == nullptr || !input->is_object()) {
        json::value kept = input == nullptr ? json::value(json::object{}) : json::value(json::object{{"value", *input}});
        report.repairs.push_back({"tool_use_input_repaired", messages[i].line,
                                  input == nullptr ? "a tool_use without an input now has {}"
                                                   : "a tool_use input that is not an object is kept as {\"value\": …}"});
        o["input"] = std::move(kept);
        changed = true;
      }
      const json::value* idv = o.if_contains("id");
      std::string id = idv != nullptr && idv->is_string() ? std::string(idv->get_string()) : "";
      std::string clean = id;
      for (char& c : clean)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) c = '_';
      if (clean.empty()) clean = "toolu_import_" + std::to_string(messages[i].line);
      if (clean == id && idv != nullptr && idv->is_string()) continue;
      o["id"] = clean;
      report.repairs.push_back({"id_rewritten", messages[i].line, "\"" + id + "\" → \"" + clean + "\""});
      changed = true;
      if (i + 1 < messages.size() && messages[i + 1].role == Role::user && !id.empty())
        for (auto& r : messages[i + 1].content)
          if (is_type(r, "tool_result") && string_field(r, "tool_use_id") == id) {
            r.as_object()["tool_use_id"] = clean;
            break;
          }
    }
  }
  return changed;
}

// A tool_use id used again (a repeated log line, a replayed trajectory) gets a fresh id, and so
// does its result: the k-th result naming the id in the next message, for the k-th call with it.
bool rename_reused_ids(std::vector<Draft>& messages, ImportReport& report) {
  std::set<std::string> used;
  bool changed = false;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role != Role::assistant) continue;
    std::map<std::string, int> seen_here;
    for (auto& b : messages[i].content) {
      if (!is_type(b, "tool_use")) continue;
      std::string id = string_field(b, "id");
      int occurrence = ++seen_here[id];
      if (used.insert(id).second && occurrence == 1) continue;
      std::string fresh;
      for (int n = 2; !used.insert(fresh = id + "_" + std::to_string(n)).second; ++n) {}
      b.as_object()["id"] = fresh;
      report.repairs.push_back({"duplicate_id_rewritten", messages[i].line, "tool_use id " + id + " used again; now " + fresh});
      changed = true;
      if (i + 1 >= messages.size() || messages[i + 1].role != Role::user) continue;
      int k = 0;
      for (auto& r : messages[i + 1].content)
        if (is_type(r, "tool_result") && string_field(r, "tool_use_id") == id && ++k == occurrence) {
          r.as_object()["tool_use_id"] = fresh;
          break;
        }
    }
  }
  return changed;
}

// A member of `block` (and of the blocks of its content) the Messages API refuses in a block of
// its type is left out, counted: a log's own bookkeeping (`invut`, a client's extra field).
void drop_refused_members(json::value& block, std::size_t line, ImportReport& report) {
  json::object* o = block.if_object();
  const json::value* type = o != nullptr ? o->if_contains("type") : nullptr;
  const std::vector<std::string_view>* members = type != nullptr && type->is_string() ? api_block_members(type->get_string()) : nullptr;
  if (members == nullptr) return;
  const std::string kind(type->get_string());
  std::vector<std::string> refused;
  for (const auto& kv : *o)
    if (std::find(members->begin(), members->end(), kv.key()) == members->end()) refused.emplace_back(kv.key());
  for (const std::string& key : refused) {
    o->erase(key);
    report.repairs.push_back({"block_member_dropped", line, "a " + kind + " block's member " + key + " (" + block_members_rule(kind) + ")"});
  }
  if (json::value* content = o->if_contains("content"); content != nullptr && content->is_array())
    for (json::value& inner : content->get_array()) drop_refused_members(inner, line, report);
}

// The repairs every importer needs so that the API accepts what it produced: blank text blocks
// and empty messages dropped, members the API refuses in a block left out, a leading assistant
// message dropped, orphan and duplicate results dropped, and every tool_use left without a result
// answered by an is_error result saying so.
void repair(std::vector<Draft>& messages, ImportReport& report, std::string_view unit) {
  for (Draft& d : messages) {
    json::array kept;
    for (auto& b : d.content) {
      if (is_type(b, "text") && blank(string_field(b, "text"))) {
        report.repairs.push_back({"blank_text_dropped", d.line, "a text block with no text"});
        continue;
      }
      drop_refused_members(b, d.line, report);
      kept.push_back(std::move(b));
    }
    d.content = std::move(kept);
  }
  // Until nothing changes: dropping a leading assistant can orphan results, whose message can
  // then empty. Every pass but the last removes a message or a block, or answers a call once.
  const std::size_t max_passes = 2 * messages.size() + 8;
  for (std::size_t pass = 0; pass < max_passes; ++pass) {
    std::vector<Draft> nonempty;
    for (Draft& d : messages) {
      if (d.content.empty()) {
        report.repairs.push_back({"empty_message_dropped", d.line, std::string(to_string(d.role)) + " message with no content"});
        continue;
      }
      nonempty.push_back(std::move(d));
    }
    messages = merge_turns(std::move(nonempty));
    while (!messages.empty() && messages.front().role == Role::assistant) {
      report.repairs.push_back({"leading_assistant_dropped", messages.front().line, "the conversation must start with the user"});
      messages.erase(messages.begin());
    }
    bool changed = repair_tool_uses(messages, report);
    changed = rename_reused_ids(messages, report) || changed;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      if (messages[i].role != Role::user) continue;
      std::vector<std::string> calls;
      if (i > 0)
        for (const auto& b : messages[i - 1].content)
          if (is_type(b, "tool_use")) calls.push_back(string_field(b, "id"));
      std::set<std::string> answered;
      json::array kept;
      for (auto& b : messages[i].content) {
        if (is_type(b, "tool_result")) {
          std::string id = string_field(b, "tool_use_id");
          bool expected = std::find(calls.begin(), calls.end(), id) != calls.end();
          if (!expected || !answered.insert(id).second) {
            report.repairs.push_back({expected ? "duplicate_result_dropped" : "orphan_result_dropped", messages[i].line,
                                      "tool_result for " + id + (expected ? " given twice" : " answers no tool_use before it")});
            changed = true;
            continue;
          }
        }
        kept.push_back(std::move(b));
      }
      messages[i].content = std::move(kept);
    }
    // Calls without results: answered as lost, at the front of the next user message.
    for (std::size_t i = 0; i < messages.size(); ++i) {
      if (messages[i].role != Role::assistant) continue;
      std::set<std::string> answered;
      if (i + 1 < messages.size())
        for (const auto& b : messages[i + 1].content)
          if (is_type(b, "tool_result")) answered.insert(string_field(b, "tool_use_id"));
      json::array lost;
      for (const auto& b : messages[i].content) {
        if (!is_type(b, "tool_use")) continue;
        std::string id = string_field(b, "id");
        if (answered.count(id)) continue;
        lost.push_back(json::object{{"type", "tool_result"}, {"tool_use_id", id}, {"is_error", true},
                                    {"content", fmt::format("[compactor import: the result of this tool call is not in the "
                                                            "session log (tool_use at {} {})]", unit, messages[i].line)}});
        report.repairs.push_back({"lost_result_answered", messages[i].line, "tool_use " + id + " had no result"});
      }
      if (lost.empty()) continue;
      changed = true;
      if (i + 1 < messages.size() && messages[i + 1].role == Role::user) {
        for (auto& b : messages[i + 1].content) lost.push_back(std::move(b));
        messages[i + 1].content = std::move(lost);
      } else {
        messages.insert(messages.begin() + static_cast<std::ptrdiff_t>(i + 1), Draft{Role::user, std::move(lost), messages[i].line, {}});
      }
    }
    if (!changed) break;
  }
}

ImportResult finish(std::vector<Draft> drafts, ImportReport report, const std::string& system) {
  ImportResult result;
  if (drafts.empty()) {
    report.empty = true;
    result.report = std::move(report);
    return result;
  }
  json::array messages;
  for (Draft& d : drafts) {
    result.message_lines.push_back(d.line);
    for (const auto& b : d.content) report.tool_uses += is_type(b, "tool_use");
    messages.push_back(json::object{{"role", to_string(d.role)}, {"content", std::move(d.content)}});
  }
  report.messages = messages.size();
  std::string text;
  if (system.empty()) {
    text = "[\n";
    for (std::size_t i = 0; i < messages.size(); ++i) text += (i ? ",\n" : "") + json::serialize(messages[i]);
    text += "\n]\n";
  } else {
    text = json::serialize(json::object{{"system", system}, {"messages", std::move(messages)}}) + "\n";
  }
  ReadOptions options;
  options.source = report.source;
  auto c = read_conversation(std::move(text), options);
  if (c) result.conversation = std::move(c).value();
  else report.repairs.push_back({"unreadable", 0, c.error().message});
  result.report = std::move(report);
  return result;
}

}  // namespace

namespace {

// The facts of a log line `calibrate` needs, whatever the line is: session id, compaction, and
// the usage of a call (once per message.id).
class CallRecorder {
 public:
  void read(const json::object& o, std::size_t line_no) {
    if (session_id.empty()) session_id = string_field(o, "sessionId");
    bool compact = (o.contains("isCompactSummary") && o.at("isCompactSummary").is_bool() && o.at("isCompactSummary").get_bool()) ||
                   string_field(o, "subtype") == "compact_boundary";
    if (compact && compaction_line == 0) compaction_line = line_no;
    if (string_field(o, "type") != "assistant") return;
    auto message = o.find("message");
    if (message == o.end() || !message->value().is_object()) return;
    const json::object& m = message->value().get_object();
    auto usage = m.find("usage");
    std::string id = string_field(m, "id");
    if (id.empty() || usage == m.end() || !usage->value().is_object()) return;
    const json::object& u = usage->value().get_object();
    auto [at, first] = seen_.emplace(id, calls.size());
    if (!first) {
      calls[at->second].output_tokens = std::max(calls[at->second].output_tokens, count(u, "output_tokens"));
      return;
    }
    calls.push_back({line_no, string_field(m, "model"),
                     count(u, "input_tokens") + count(u, "cache_read_input_tokens") + count(u, "cache_creation_input_tokens"),
                     count(u, "output_tokens")});
  }

  std::vector<RecordedCall> calls;
  std::string session_id;
  std::size_t compaction_line = 0;

 private:
  static std::uint64_t count(const json::object& o, std::string_view key) {
    auto it = o.find(key);
    if (it == o.end()) return 0;
    if (it->value().is_int64()) return static_cast<std::uint64_t>(std::max<std::int64_t>(0, it->value().get_int64()));
    if (it->value().is_uint64()) return it->value().get_uint64();
    return 0;
  }
  std::map<std::string, std::size_t> seen_;  // message.id → its call
};

}  // namespace

ImportResult import_claude_code(std::string_view bytes, const std::string& source, bool sidechain) {
  ImportReport report;
  report.source = source;
  report.format = ImportFormat::claude_code;
  std::vector<Draft> chain;
  std::unordered_map<std::string, std::size_t> position;  // uuid → chain length right after it
  std::set<std::string> log_tool_uses;
  CallRecorder recorder;
  JsonLines lines(bytes);
  while (std::optional<json::value> read = lines.next(report)) {
    const std::size_t line_no = lines.line_no();
    json::value& v = *read;
    json::object& o = v.get_object();
    recorder.read(o, line_no);
    std::string type = string_field(v, "type"), uuid = string_field(v, "uuid"), parent = string_field(v, "parentUuid");
    auto known_parent = parent.empty() ? position.end() : position.find(parent);
    // Where the chain stands after this line: a line whose parent is known continues from it.
    auto register_position = [&](std::size_t at) {
      if (!uuid.empty()) position[uuid] = at;
    };
    bool is_side = o.contains("isSidechain") && o.at("isSidechain").is_bool() && o.at("isSidechain").get_bool();
    if (type != "user" && type != "assistant") {
      ++report.other_skipped;
      register_position(known_parent != position.end() ? known_parent->second : chain.size());
      continue;
    }
    if (is_side != sidechain) {
      ++report.sidechain_skipped;
      continue;
    }
    if (o.contains("isMeta") && o.at("isMeta").is_bool() && o.at("isMeta").get_bool()) {
      ++report.meta_skipped;
      register_position(known_parent != position.end() ? known_parent->second : chain.size());
      continue;
    }
    auto message = o.find("message");
    if (message == o.end() || !message->value().is_object()) {
      ++report.other_skipped;
      continue;
    }
    json::value none;
    json::value* found = message->value().get_object().if_contains("content");
    json::value& content = found != nullptr ? *found : none;  // its blocks are moved into the draft
    // A typed prompt whose parent is earlier in the chain: the user rewound the session there, and
    // the branch after that point is abandoned. (Tool results are not rewinds: Claude Code
    // parents each result to the line holding its own tool_use, so parallel calls branch.)
    bool prompt = type == "user" && (content.is_string() || (content.is_array() && std::none_of(content.get_array().begin(), content.get_array().end(),
                                                                                                  [](const json::value& b) { return is_type(b, "tool_result"); })));
    if (prompt && known_parent != position.end() && known_parent->second < chain.size()) {
      report.rewound_skipped += chain.size() - known_parent->second;
      chain.resize(known_parent->second);
    }
    Draft d{type == "user" ? Role::user : Role::assistant, {}, line_no, string_field(message->value(), "id")};
    if (content.is_string()) {
      d.content.push_back(json::object{{"type", "text"}, {"text", std::move(content.get_string())}});
    } else if (content.is_array()) {
      for (auto& b : content.get_array())
        if (b.is_object()) d.content.push_back(std::move(b));
    }
    for (const auto& b : d.content)
      if (is_type(b, "tool_use")) log_tool_uses.insert(string_field(b, "id"));
    chain.push_back(std::move(d));
    register_position(chain.size());
  }
  report.tool_uses_in_log = log_tool_uses.size();
  // Assistant lines sharing a message.id are one message (merge_turns joins them, and the rest).
  repair(chain, report, "line");
  ImportResult result = finish(std::move(chain), std::move(report), "");
  result.recorded_calls = std::move(recorder.calls);
  result.session_id = std::move(recorder.session_id);
  result.compaction_line = recorder.compaction_line;
  return result;
}

// The text of a message's content: a string, or the text of its text parts. A part of another
// kind (an image, audio, a file) has no place in the imported text: it is a repair, never
// dropped unsaid. Content of another type is refused.
Expected<std::string> openai_text_of(const json::value& content, const std::string& where, std::size_t index, ImportReport& report) {
  if (content.is_string()) return std::string(content.get_string());
  if (!content.is_array())
    return Error{where + ".content must be a string or an array of parts, got " + std::string(detail::json_kind(content))};
  std::string out;
  const json::array& parts = content.get_array();
  for (std::size_t j = 0; j < parts.size(); ++j) {
    const json::value& part = parts[j];
    if (!is_type(part, "text")) {
      std::string type = string_field(part, "type");
      report.repairs.push_back({"part_dropped", index, where + ".content." + std::to_string(j) + " (" +
                                                            (type.empty() ? std::string(detail::json_kind(part)) : type) +
                                                            ") is not carried"});
      continue;
    }
    const json::value* text = part.get_object().if_contains("text");
    if (text == nullptr || !text->is_string())
      return Error{where + ".content." + std::to_string(j) + ".text must be a string, got " +
                   (text == nullptr ? std::string("nothing") : std::string(detail::json_kind(*text)))};
    out += (out.empty() ? "" : "\n") + std::string(text->get_string());
  }
  return out;
}

// A tool call's input from its function.arguments: a JSON string by the spec; some histories
// hold the object itself (kept as is) or null / nothing / "" (an empty input, counted as a
// repair); anything else is refused, never silently emptied. `not_json` makes the error for
// arguments that are not JSON.
Expected<json::value> openai_tool_input(const json::value& call, const json::object& function, const std::string& at, std::size_t i,
                                        ImportReport& report,
                                        const std::function<Error(const detail::JsonErrorAt&, std::string_view)>& not_json) {
  const json::value* given = function.if_contains("arguments");
  if (given != nullptr && given->is_object()) return *given;
  if (given == nullptr || given->is_null() || (given->is_string() && given->get_string().empty())) {
    report.repairs.push_back({"missing_arguments_emptied", i,
                              "tool call " + string_field(call, "id") + " has " +
                                  (given == nullptr ? "no" : given->is_null() ? "null" : "empty") + " function.arguments; its input is {}"});
    return json::value(json::object{});
  }
  if (!given->is_string())
    return Error{at + ".function.arguments must be a JSON string or object, got " + std::string(detail::json_kind(*given))};
  const std::string_view arguments = given->get_string();
  detail::ValueParser arguments_parser(arguments);
  detail::JsonErrorAt refusal;
  auto read = detail::read_json(arguments_parser, arguments, {0, arguments.size()}, refusal);
  if (!read) return not_json(refusal, arguments);
  return std::move(*read);
}

// The ids of an OpenAI history as the Anthropic form takes them: one the API refuses
// (^[a-zA-Z0-9_-]+$) rewritten the same way in calls and results; a call id used twice (SWE-agent
// replays do this) given a fresh one, and so is the next result that names it. Each a repair.
struct OpenAiIds {
  explicit OpenAiIds(ImportReport& r) : report(r) {}
  ImportReport& report;
  std::unordered_map<std::string, std::string> renamed;
  std::set<std::string> used;
  std::unordered_map<std::string, std::string> pending;

  std::string api_id(const std::string& id, std::size_t index) {
    std::string clean = id;
    for (char& c : clean)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) c = '_';
    if (clean.empty()) clean = "call_" + std::to_string(index);
    if (clean != id && renamed.emplace(id, clean).second)
      report.repairs.push_back({"id_rewritten", index, "\"" + id + "\" → \"" + clean + "\""});
    return clean;
  }
  std::string call(const std::string& original, std::size_t index) {
    std::string id = api_id(original, index);
    if (used.insert(id).second) return id;
    std::string fresh;
    for (int n = 2; !used.insert(fresh = id + "_" + std::to_string(n)).second; ++n) {}
    report.repairs.push_back({"duplicate_id_rewritten", index, "tool call id " + id + " used again; now " + fresh});
    pending[original] = fresh;
    return fresh;
  }
  std::string result(const std::string& id, std::size_t index) {
    auto r = pending.find(id);
    if (r == pending.end()) return api_id(id, index);
    std::string fresh = r->second;
    pending.erase(r);
    return fresh;
  }
};

// The messages of an OpenAI history: a messages array, {"messages": […]}, or a trajectory's
// {"history": […]}; `key` and `steps` say how errors name them and where they are.
const json::array* openai_history_list(const json::value& root, std::string& key, std::vector<detail::PathStep>& steps) {
  key = "messages";
  const json::array* list = nullptr;
  if (root.is_array()) list = &root.get_array();
  else if (root.is_object() && root.get_object().contains("messages") && root.at("messages").is_array()) list = &root.at("messages").get_array();
  else if (root.is_object() && root.get_object().contains("history") && root.at("history").is_array()) {
    list = &root.at("history").get_array();
    key = "history";
  }
  if (root.is_object()) steps.push_back({key});
  return list;
}

Expected<ImportResult> import_openai(std::string_view bytes, const std::string& source) {
  ImportReport report;
  report.source = source;
  report.format = ImportFormat::openai;
  boost::system::error_code ec;
  json::value root = detail::parse_json(bytes, ec);
  if (ec) {
    if (auto at = detail::find_json_error(bytes)) return Error{at->to_string(source)};
    return Error{source + ": not valid JSON: " + ec.message()};
  }
  std::string list_key;  // how error paths name the list: messages.N, or history.N in a trajectory
  std::vector<detail::PathStep> list_steps;  // where the list is in the file: nothing for a top-level array
  const json::array* list = openai_history_list(root, list_key, list_steps);
  if (list == nullptr) return Error{source + ": expected an OpenAI messages array, {\"messages\": […]} or a trajectory {\"history\": […]}"};

  // Where a value of the file is, for an error about it: `source:line:col (byte N)`.
  auto place_of = [&](const std::vector<detail::PathStep>& path) {
    auto span = detail::find_value_span(bytes, path);
    if (!span) return source;
    detail::LineColumn lc = detail::line_column(bytes, span->begin);
    return fmt::format("{}:{}:{} (byte {})", source, lc.line, lc.column, span->begin);
  };
  static const std::set<std::string> kKnown = {"role", "content", "tool_calls", "tool_call_id", "tool_call_ids", "name"};

  OpenAiIds ids(report);
  std::string system;
  std::vector<Draft> drafts;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json::value& m = (*list)[i];
    ++report.lines;
    const std::string path = list_key + "." + std::to_string(i);
    std::string where = source + ": " + path;
    if (!m.is_object()) return Error{where + ": a message must be an object"};
    for (const auto& kv : m.get_object())
      if (!kKnown.count(kv.key())) ++report.fields_dropped;
    // A field the history gives with the wrong type is refused, never read as empty.
    for (std::string_view key : {"role", "tool_call_id", "name"})
      if (const json::value* f = m.get_object().if_contains(key); f != nullptr && !f->is_string() && !(key != "role" && f->is_null()))
        return Error{where + "." + std::string(key) + " must be a string, got " + std::string(detail::json_kind(*f))};
    std::string role = string_field(m, "role");
    const json::value* content = m.get_object().if_contains("content");
    // Only an assistant's content may be null or absent (its tool calls say what it did).
    const json::value no_content;
    if (content == nullptr || content->is_null()) {
      if (role == "system" || role == "developer" || role == "user" || role == "tool")
        return Error{where + ".content: a " + role + " message needs content, got " + (content == nullptr ? "nothing" : "null")};
      content = &no_content;
    }
    auto text = content->is_null() ? Expected<std::string>(std::string()) : openai_text_of(*content, where, i, report);
    if (!text) return text.error();
    if (role == "system" || role == "developer") {
      system += (system.empty() ? "" : "\n\n") + *text;
      continue;
    }
    if (role == "user") {
      drafts.push_back({Role::user, json::array{json::object{{"type", "text"}, {"text", *text}}}, i, {}});
      continue;
    }
    if (role == "assistant") {
      Draft d{Role::assistant, {}, i, {}};
      if (!text->empty()) d.content.push_back(json::object{{"type", "text"}, {"text", *text}});
      if (const json::value* tool_calls = m.get_object().if_contains("tool_calls"); tool_calls != nullptr && !tool_calls->is_null()) {
        if (!tool_calls->is_array())
          return Error{where + ".tool_calls must be an array, got " + std::string(detail::json_kind(*tool_calls))};
        const auto& calls = tool_calls->get_array();
        for (std::size_t k = 0; k < calls.size(); ++k) {
          const json::value& call = calls[k];
          std::string at = where + ".tool_calls." + std::to_string(k);
          const json::value* function = call.is_object() && call.get_object().contains("function") ? &call.at("function") : nullptr;
          if (function == nullptr || !function->is_object()) return Error{at + ": has no function"};
          auto read = openai_tool_input(call, function->get_object(), at, i, report, [&](const detail::JsonErrorAt& refusal, std::string_view arguments) {
            std::vector<detail::PathStep> steps = list_steps;
            steps.insert(steps.end(), {{{}, i}, {"tool_calls"}, {{}, k}, {"function"}, {"arguments"}});
            return Error{fmt::format("{}: {}.tool_calls.{}.function.arguments is not JSON: {} at byte {} of the string {}",
                                     place_of(steps), path, k, refusal.what, refusal.offset, one_line_excerpt(arguments, 60))};
          });
          if (!read) return read.error();
          json::value input = std::move(*read);
          if (!input.is_object()) return Error{at + ".function.arguments is not a JSON object"};
          d.content.push_back(json::object{{"type", "tool_use"}, {"id", ids.call(string_field(call, "id"), i)},
                                           {"name", string_field(*function, "name")}, {"input", std::move(input)}});
        }
      }
      drafts.push_back(std::move(d));
      continue;
    }
    if (role == "tool") {
      std::string id = string_field(m, "tool_call_id");
      if (id.empty() && m.get_object().contains("tool_call_ids") && m.at("tool_call_ids").is_array() &&
          !m.at("tool_call_ids").get_array().empty() && m.at("tool_call_ids").get_array()[0].is_string())
        id = std::string(m.at("tool_call_ids").get_array()[0].get_string());
      drafts.push_back({Role::user, json::array{json::object{{"type", "tool_result"}, {"tool_use_id", ids.result(id, i)},
                                                             {"content", *text}}}, i, {}});
      continue;
    }
    return Error{where + ": unknown role \"" + role + "\""};
  }
  repair(drafts, report, "message");
  return finish(std::move(drafts), std::move(report), system);
}

std::string export_openai(const Conversation& c, std::map<std::string, std::size_t>* left_out) {
  auto leave_out = [&](std::string_view type) {
    if (left_out != nullptr) ++(*left_out)[std::string(type)];
  };
  json::array out;
  // A request body's system prompt comes back as the system message.
  if (const auto& buffer = ConversationHost::layout(c.frame()).buffer; c.format() == InputFormat::request_body && buffer) {
    boost::system::error_code ec;
    json::value body = detail::parse_json(*buffer, ec);
    if (!ec && body.is_object() && body.get_object().contains("system")) {
      const json::value& s = body.at("system");
      std::string text;
      if (s.is_string()) text = std::string(s.get_string());
      else if (s.is_array())
        for (const auto& part : s.get_array()) text += (text.empty() ? "" : "\n") + string_field(part, "text");
      out.push_back(json::object{{"role", "system"}, {"content", text}});
    }
  }
  // System entries inside `messages` go out as system messages at their places.
  const auto& entries = c.frame().system_entries;
  const auto& slots = c.system_slots();
  std::size_t next_entry = 0;
  auto entries_up_to = [&](std::size_t slot) {
    for (; next_entry < entries.size() && next_entry < slots.size() && slots[next_entry] <= slot; ++next_entry) {
      boost::system::error_code ec;
      json::value e = detail::parse_json(entries[next_entry].raw, ec);
      const json::value* content = !ec && e.is_object() ? e.get_object().if_contains("content") : nullptr;
      std::string text;
      if (content != nullptr && content->is_string()) text = std::string(content->get_string());
      else if (content != nullptr && content->is_array())
        for (const auto& part : content->get_array()) text += (text.empty() ? "" : "\n") + string_field(part, "text");
      out.push_back(json::object{{"role", "system"}, {"content", text}});
    }
  };
  for (std::size_t index = 0; index < c.size(); ++index) {
    entries_up_to(index);
    const MessagePtr& m = c.messages()[index];
    if (m->role() == Role::user) {
      std::string text;
      for (const Block& b : m->blocks()) {
        if (b.kind() == BlockKind::tool_result) {
          std::string content;
          if (const json::value* v = b.content(); v != nullptr && v->is_string()) content = std::string(v->get_string());
          else if (v != nullptr && v->is_array())
            for (const auto& part : v->get_array()) {
              if (is_type(part, "text")) content += (content.empty() ? "" : "\n") + string_field(part, "text");
              else leave_out((part.is_object() ? string_field(part, "type") : std::string("other")) + " parts of tool results");
            }
          out.push_back(json::object{{"role", "tool"}, {"tool_call_id", b.tool_use_id()}, {"content", content}});
          if (b.is_error()) leave_out("is_error flags of tool results");
        } else if (b.kind() == BlockKind::text) {
          text += (text.empty() ? "" : "\n") + std::string(b.text());
        } else {
          leave_out(std::string(b.type()) + " blocks");
        }
      }
      if (!text.empty()) out.push_back(json::object{{"role", "user"}, {"content", text}});
      continue;
    }
    std::string text;
    json::array calls;
    for (const Block& b : m->blocks()) {
      if (b.kind() == BlockKind::text) text += (text.empty() ? "" : "\n") + std::string(b.text());
      else if (b.kind() != BlockKind::tool_use) leave_out(std::string(b.type()) + " blocks");
      if (b.kind() == BlockKind::tool_use)
        calls.push_back(json::object{{"id", b.id()}, {"type", "function"},
                                     {"function", json::object{{"name", b.name()},
                                                               {"arguments", json::serialize(b.input() ? *b.input() : json::value(json::object{}))}}}});
    }
    json::object msg{{"role", "assistant"}, {"content", text.empty() ? json::value(nullptr) : json::value(text)}};
    if (!calls.empty()) msg["tool_calls"] = std::move(calls);
    out.push_back(std::move(msg));
  }
  entries_up_to(c.size());
  std::string text = "[\n";
  for (std::size_t i = 0; i < out.size(); ++i) text += (i ? ",\n" : "") + json::serialize(out[i]);
  return text + "\n]\n";
}

ImportResult finish_import(std::vector<ImportDraft> drafts, ImportReport report, std::string_view unit) {
  std::vector<Draft> messages;
  messages.reserve(drafts.size());
  for (ImportDraft& d : drafts) messages.push_back(Draft{d.role, std::move(d.content), d.line, {}});
  repair(messages, report, unit);
  return finish(std::move(messages), std::move(report), "");
}

ImportFormat detect_import_format(std::string_view bytes, const std::string& name) {
  if (name.size() > 5 && name.substr(name.size() - 5) == ".traj") return ImportFormat::openai;
  if (is_codex_session(bytes)) return ImportFormat::codex;
  std::string_view head = bytes.substr(0, 1 << 16);
  if (is_gemini_chat(head)) return ImportFormat::gemini_cli;  // it has a sessionId too
  for (std::string_view marker : {"\"parentUuid\"", "\"sessionId\"", "\"leafUuid\"", "\"file-history-snapshot\""})
    if (head.find(marker) != std::string_view::npos) return ImportFormat::claude_code;
  // A system message alone is not enough: in an Anthropic history it is a mistake to report.
  for (std::string_view marker : {"\"tool_calls\"", "\"role\":\"tool\"", "\"role\": \"tool\"", "\"history\""})
    if (head.find(marker) != std::string_view::npos) return ImportFormat::openai;
  return ImportFormat::anthropic;
}

Expected<ImportResult> import_file(const std::string& path, std::optional<ImportFormat> format, bool sidechain) {
  auto read = read_input_bytes(path);
  if (!read) return read.error();
  std::string bytes = std::move(read).value();
  std::string source = path == "-" ? "<stdin>" : path;
  std::string name = source.substr(source.find_last_of('/') + 1);
  ImportFormat f = format.value_or(detect_import_format(bytes, name));
  switch (f) {
    case ImportFormat::claude_code:
      return import_claude_code(bytes, source, sidechain || name.rfind("agent-", 0) == 0);
    case ImportFormat::openai:
      return import_openai(bytes, source);
    case ImportFormat::codex:
      return import_codex_session(bytes, source);
    case ImportFormat::gemini_cli:
      return import_gemini_chat(bytes, source);
    case ImportFormat::anthropic: {
      ReadOptions options;
      options.source = source;
      auto c = read_conversation(std::move(bytes), options);
      // An OpenAI chat without tool calls looks like Anthropic messages but starts with its system
      // message: detection keeps the error (in Anthropic messages it is a mistake), and says what
      // to give if the file is such a chat.
      if (!c && !format && c.error().message.find("(rule: never first)") != std::string::npos)
        return Error{c.error().message + "\n" + source +
                     ": an OpenAI chat history starts with its system message; if this is one, give --input-format openai"};
      if (!c) return c.error();
      ImportResult r;
      r.report.source = source;
      r.report.messages = c->size();
      for (const MessagePtr& m : c->messages())
        for (const Block& b : m->blocks()) r.report.tool_uses += b.kind() == BlockKind::tool_use;
      r.conversation = std::move(c).value();
      return r;
    }
  }
  return Error{"unknown format"};
}

std::string ImportReport::summary_line() const {
  std::string out = counted(messages, "message", "messages") + ", " + counted(tool_uses, "tool_use", "tool_uses");
  if (!broken_lines.empty())
    out += ", " + counted(broken_lines.size(), "broken line", "broken lines") + " skipped" +
           (first_broken_why.empty() ? "" : " (" + std::string(broken_lines.size() == 1 ? "" : "first: ") + first_broken_why + ")");
  if (rewound_skipped) out += ", " + counted(rewound_skipped, "rewound message", "rewound messages") + " left out";
  if (fields_dropped) out += ", " + counted(fields_dropped, "field", "fields") + " left out";
  out += ", " + counted(repairs.size(), "repair", "repairs");
  return out;
}

std::string ImportReport::to_json() const {
  json::array broken(broken_lines.begin(), broken_lines.end());
  json::array rep;
  for (const auto& r : repairs) rep.push_back(json::object{{"kind", r.kind}, {"line", r.line}, {"detail", r.detail}});
  return json::serialize(json::object{{"source", source}, {"format", to_string(format)}, {"lines", lines},
                                      {"broken_lines", broken}, {"first_broken_why", first_broken_why},
                                      {"meta_skipped", meta_skipped},
                                      {"sidechain_skipped", sidechain_skipped}, {"other_skipped", other_skipped},
                                      {"rewound_skipped", rewound_skipped}, {"fields_dropped", fields_dropped},
                                      {"repairs", rep}, {"messages", messages}, {"tool_uses", tool_uses},
                                      {"tool_uses_in_log", tool_uses_in_log}, {"empty", empty}});
}

}  // namespace compactor
