#include "import/importers.hpp"

#include "checkers/block_members.hpp"

#include "import/import_drafts.hpp"
#include "import/log_json.hpp"

#include "model/conversation_reader.hpp"
#include "model/field_types.hpp"
#include "platform/counted.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

namespace compactor {

namespace json = boost::json;
using logs::is_type;
using logs::string_field;

namespace {


bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// Consecutive messages of one role become one, results first: logs split parallel calls and
// their results over several lines, and the API reads pairing per message.
std::vector<ImportDraft> merge_turns(std::vector<ImportDraft> in) {
  std::vector<ImportDraft> out;
  for (ImportDraft& d : in) {
    if (!out.empty() && out.back().role == d.role) {
      for (auto& b : d.content) out.back().content.push_back(std::move(b));
    } else {
      out.push_back(std::move(d));
    }
  }
  for (ImportDraft& d : out) {
    if (d.role != Role::user) continue;
    std::stable_partition(d.content.begin(), d.content.end(), [](const json::value& b) { return is_type(b, "tool_result"); });
  }
  return out;
}

// A tool_use the API would refuse is made well-formed, each change counted: a missing or
// non-string name becomes "unknown_tool"; a missing input becomes {} and a non-object one is kept
// as {"value": …}; an id the API refuses (^[a-zA-Z0-9_-]+$) has its other characters replaced
// by '_' (an empty one becomes "toolu_import_<line>"), and the next message's results follow it.
bool repair_tool_uses(std::vector<ImportDraft>& messages, ImportReport& report) {
  bool changed = false;
  // A call in a user message or a result in an assistant one is kept as text, not as a block the
  // API refuses there.
  for (ImportDraft& d : messages)
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
bool rename_reused_ids(std::vector<ImportDraft>& messages, ImportReport& report) {
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
void repair(std::vector<ImportDraft>& messages, ImportReport& report, std::string_view unit) {
  for (ImportDraft& d : messages) {
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
    std::vector<ImportDraft> nonempty;
    for (ImportDraft& d : messages) {
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
        messages.insert(messages.begin() + static_cast<std::ptrdiff_t>(i + 1), ImportDraft{Role::user, std::move(lost), messages[i].line});
      }
    }
    if (!changed) break;
  }
}

ImportResult finish(std::vector<ImportDraft> drafts, ImportReport report, const std::string& system) {
  ImportResult result;
  if (drafts.empty()) {
    report.empty = true;
    result.report = std::move(report);
    return result;
  }
  json::array messages;
  for (ImportDraft& d : drafts) {
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

ImportResult finish_import(std::vector<ImportDraft> drafts, ImportReport report, std::string_view unit, const std::string& system) {
  repair(drafts, report, unit);
  return finish(std::move(drafts), std::move(report), system);
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
  return json::serialize(json::object{{"source", source}, {"format", format}, {"lines", lines},
                                      {"broken_lines", broken}, {"first_broken_why", first_broken_why},
                                      {"meta_skipped", meta_skipped},
                                      {"sidechain_skipped", sidechain_skipped}, {"other_skipped", other_skipped},
                                      {"rewound_skipped", rewound_skipped}, {"fields_dropped", fields_dropped},
                                      {"repairs", rep}, {"messages", messages}, {"tool_uses", tool_uses},
                                      {"tool_uses_in_log", tool_uses_in_log}, {"empty", empty}});
}

}  // namespace compactor
