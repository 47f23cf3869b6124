#include "wire/openai_responses/responses_items.hpp"

#include "model/conversation_host.hpp"
#include "model/field_types.hpp"
#include "model/json_scanner.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

namespace compactor {
namespace {

namespace json = boost::json;
using detail::foreign_members;

// The carry rule's block and member (wire/carried.hpp, one layer up, reads them).
constexpr std::string_view kCarried = "carried";

json::object carried_block(std::string_view of, json::value value, bool reasoning = false) {
  json::object block{{"type", kCarried}, {"of", of}, {"value", std::move(value)}};
  if (reasoning) block["reasoning"] = true;
  return block;
}

std::string kind_of(const json::value& v) { return std::string(detail::json_kind(v)); }

void carry(json::object& block, json::object members) {
  if (!members.empty()) block.emplace(kCarried, std::move(members));
}

std::string_view string_member(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

// The text a message item opens with: its string content, or its first text part's text.
std::string_view first_text(const json::object& o) {
  const json::value* content = o.if_contains("content");
  if (content == nullptr) return {};
  if (content->is_string()) return content->get_string();
  if (content->is_array())
    for (const auto& part : content->get_array())
      if (const json::object* p = part.if_object())
        if (std::string_view t = string_member(*p, "text"); !t.empty()) return t;
  return {};
}

enum class ItemKind { instruction, user, produced, reasoning, call, output };

// The part type a role's text is written with.
std::string_view text_part_type(std::string_view role) { return role == "assistant" ? "output_text" : "input_text"; }

// A content part as a block: a text part as a text block (its other members carried, its type too
// when it is not the role's usual one); any other part carried whole.
json::value block_of_part(const json::value& part, std::string_view role) {
  const json::object* o = part.if_object();
  std::string_view type = o != nullptr ? string_member(*o, "type") : std::string_view();
  const json::value* text = o != nullptr ? o->if_contains("text") : nullptr;
  const bool is_text = type == "input_text" || type == "output_text" || type == "text";
  if (!is_text || text == nullptr || !text->is_string()) return carried_block("part", part);
  json::object block{{"type", "text"}, {"text", *text}};
  json::object members = foreign_members(*o, {"text"});
  if (type == text_part_type(role)) members.erase("type");
  carry(block, std::move(members));
  return block;
}

class Reader {
 public:
  Reader(ResponsesHistory& h, const std::string& where) : h_(h), where_(where) {}

  Expected<bool> read(const json::array& list);

  std::vector<MessagePtr> messages;
  std::vector<std::size_t> entry_slots;

 private:
  std::string at(std::size_t i) const { return fmt::format("{}.{}", where_, i); }
  Expected<ItemKind> classify(const json::object& o, std::size_t i) const;
  Expected<bool> message_blocks(const json::object& o, std::size_t i, std::string_view role, json::array& blocks) const;
  Expected<bool> add(json::object message, ResponsesItemRange origin, std::size_t i);
  Expected<bool> flush_assistant();
  Expected<bool> flush_results();
  Expected<bool> call(const json::object& o, std::size_t i);
  Expected<bool> output(const json::object& o, std::size_t i);

  ResponsesHistory& h_;
  const std::string& where_;
  json::array assistant_, results_;
  ResponsesItemRange assistant_origin_, results_origin_;
};

Expected<ItemKind> Reader::classify(const json::object& o, std::size_t i) const {
  const std::string_view type = string_member(o, "type");
  const json::value* role = o.if_contains("role");
  if (type == "message" || (type.empty() && role != nullptr)) {
    if (role == nullptr || !role->is_string()) return Error{at(i) + ".role must be a string"};
    std::string_view r = role->get_string();
    if (r == "developer" || r == "system") return ItemKind::instruction;
    if (r == "user") return is_injected_context(first_text(o)) ? ItemKind::instruction : ItemKind::user;
    if (r == "assistant") return ItemKind::produced;
    return Error{fmt::format("{}: role \"{}\" is not one the API takes (user, assistant, system, developer)", at(i), r)};
  }
  if (type.empty()) return Error{at(i) + ": an item needs a type (or a role, for a message)"};
  if (type == "reasoning") return ItemKind::reasoning;
  // What the server compacted earlier turns into: opaque, and all the model has of them.
  if (type == "compaction" || type == "compaction_summary") return ItemKind::instruction;
  const bool has_call_id = o.contains("call_id");
  if (has_call_id && type.ends_with("_call_output")) return ItemKind::output;
  if (has_call_id && type.ends_with("_call")) return ItemKind::call;
  return ItemKind::produced;
}

Expected<bool> Reader::message_blocks(const json::object& o, std::size_t i, std::string_view role, json::array& blocks) const {
  json::object fields = foreign_members(o, {"role", "content"});
  if (string_member(fields, "type") == "message") fields.erase("type");
  if (!fields.empty()) blocks.push_back(carried_block("fields", std::move(fields)));
  const json::value* content = o.if_contains("content");
  if (content == nullptr || content->is_null()) return Error{at(i) + ".content: a message needs content"};
  if (content->is_string()) {
    if (!content->get_string().empty() || role != "assistant") blocks.push_back(json::object{{"type", "text"}, {"text", *content}});
    return true;
  }
  if (!content->is_array()) return Error{at(i) + ".content must be a string or an array of parts, got " + kind_of(*content)};
  const json::array& parts = content->get_array();
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (!parts[k].is_object()) return Error{fmt::format("{}.content.{} must be an object, got {}", at(i), k, kind_of(parts[k]))};
    blocks.push_back(block_of_part(parts[k], role));
  }
  return true;
}

Expected<bool> Reader::add(json::object message, ResponsesItemRange origin, std::size_t i) {
  auto m = Message::from_json(std::move(message));
  if (!m) return Error{fmt::format("{}: {}", at(i), m.error().message)};
  h_.origins.push_back(origin);
  messages.push_back(std::move(*m));
  return true;
}

Expected<bool> Reader::flush_assistant() {
  if (assistant_.empty()) return true;
  auto added = add(json::object{{"role", "assistant"}, {"content", std::move(assistant_)}}, assistant_origin_, assistant_origin_.first);
  assistant_ = json::array();
  return added;
}

Expected<bool> Reader::flush_results() {
  if (results_.empty()) return true;
  const std::size_t model = messages.size();
  for (std::size_t j = 0; j < results_.size(); ++j)
    h_.results[std::string(results_[j].at("tool_use_id").get_string())] = {model, j};
  auto added = add(json::object{{"role", "user"}, {"content", std::move(results_)}}, results_origin_, results_origin_.first);
  results_ = json::array();
  return added;
}

Expected<bool> Reader::call(const json::object& o, std::size_t i) {
  const json::value* id = o.if_contains("call_id");
  if (id == nullptr || !id->is_string() || id->get_string().empty()) return Error{at(i) + ".call_id must be a non-empty string"};
  const std::string_view type = string_member(o, "type");
  json::object carried = foreign_members(o, {"call_id", "name"});
  std::string_view name = string_member(o, "name");
  json::value input = json::object{};
  if (type == "function_call") {
    // The arguments are the model's JSON text: read as the tool's input when they are an object
    // that writes back to the same text, else carried as they came.
    std::string_view arguments = string_member(o, "arguments");
    boost::system::error_code ec;
    json::value parsed = detail::parse_json(arguments, ec);
    if (!ec && parsed.is_object() && json::serialize(parsed) == arguments) {
      input = std::move(parsed);
      carried.erase("arguments");
    }
  } else if (type == "custom_tool_call" && o.contains("input") && o.at("input").is_string()) {
    input = json::object{{"input", o.at("input")}};  // free-form text: the tool's input, as stages see one
    carried.erase("input");
  }
  if (name.empty()) name = type;  // a call of a built-in tool has none
  json::object use{{"type", "tool_use"}, {"id", *id}, {"name", name}, {"input", std::move(input)}};
  carry(use, std::move(carried));
  assistant_.push_back(std::move(use));
  return true;
}

Expected<bool> Reader::output(const json::object& o, std::size_t i) {
  const json::value* id = o.if_contains("call_id");
  if (id == nullptr || !id->is_string() || id->get_string().empty()) return Error{at(i) + ".call_id must be a non-empty string"};
  json::object result{{"type", "tool_result"}, {"tool_use_id", *id}};
  json::object carried = foreign_members(o, {"call_id", "output"});
  const json::value* out = o.if_contains("output");
  if (out != nullptr && out->is_string()) {
    result.emplace("content", *out);
  } else if (out != nullptr && out->is_array()) {
    json::array blocks;
    for (const auto& part : out->get_array()) {
      if (!part.is_object()) return Error{at(i) + ".output: a part must be an object, got " + kind_of(part)};
      blocks.push_back(block_of_part(part, "user"));
    }
    result.emplace("content", std::move(blocks));
  } else {
    result.emplace("content", "");  // another tool's output (a screenshot…): carried as it came
    if (out != nullptr) carried.emplace("output", *out);
  }
  carry(result, std::move(carried));
  h_.result_items[std::string(id->get_string())] = i;
  results_.push_back(std::move(result));
  return true;
}

Expected<bool> Reader::read(const json::array& list) {
  bool in_head = true;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json::object* o = list[i].if_object();
    if (o == nullptr) return Error{at(i) + " must be an object, got " + kind_of(list[i])};
    auto kind = classify(*o, i);
    if (!kind) return kind.error();
    if (*kind == ItemKind::instruction) {
      if (in_head) {
        h_.head = i + 1;
        continue;
      }
      if (auto f = flush_assistant(); !f) return f;
      if (auto f = flush_results(); !f) return f;
      h_.entry_items.push_back(i);
      entry_slots.push_back(messages.size());
      continue;
    }
    in_head = false;
    switch (*kind) {
      case ItemKind::user: {
        if (auto f = flush_assistant(); !f) return f;
        if (auto f = flush_results(); !f) return f;
        const json::value* content = o->if_contains("content");
        json::object fields = foreign_members(*o, {"role", "content"});
        if (string_member(fields, "type") == "message") fields.erase("type");
        if (content != nullptr && content->is_string() && fields.empty()) {
          if (auto a = add(json::object{{"role", "user"}, {"content", *content}}, {i, i + 1}, i); !a) return a;
          break;
        }
        json::array blocks;
        if (auto b = message_blocks(*o, i, "user", blocks); !b) return b;
        if (auto a = add(json::object{{"role", "user"}, {"content", std::move(blocks)}}, {i, i + 1}, i); !a) return a;
        break;
      }
      case ItemKind::output:
        if (auto f = flush_assistant(); !f) return f;
        if (results_.empty()) results_origin_ = {i, i};
        results_origin_.last = i + 1;
        if (auto r = output(*o, i); !r) return r;
        break;
      default: {  // the model's: one assistant message per run
        if (auto f = flush_results(); !f) return f;
        if (assistant_.empty()) assistant_origin_ = {i, i};
        assistant_origin_.last = i + 1;
        if (*kind == ItemKind::call) {
          if (auto c = call(*o, i); !c) return c;
        } else if (*kind == ItemKind::reasoning) {
          assistant_.push_back(carried_block("item", *o, true));
        } else if (string_member(*o, "type") == "message" || (!o->contains("type") && o->contains("role"))) {
          if (auto b = message_blocks(*o, i, "assistant", assistant_); !b) return b;
        } else {
          assistant_.push_back(carried_block("item", *o));
        }
      }
    }
  }
  if (auto f = flush_assistant(); !f) return f;
  return flush_results();
}

}  // namespace

bool is_injected_context(std::string_view text) {
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return false;
  text.remove_prefix(start);
  for (std::string_view marker : {"<environment_context>", "<user_instructions>", "# AGENTS.md instructions for ", "<turn_aborted>",
                                  "<user_shell_command>", "<subagent_notification>"})
    if (text.starts_with(marker)) return true;
  return false;
}

Expected<ResponsesHistory> read_responses_items(std::shared_ptr<const std::string> body, const std::vector<std::string_view>& items,
                                                const json::array& parsed, const std::vector<std::string_view>& fixed,
                                                const std::string& where) {
  ResponsesHistory h;
  Reader reader(h, where);
  if (auto read = reader.read(parsed); !read) return read.error();
  if (reader.messages.empty()) return Error{where + ": no items to compact (only instructions and context)"};
  auto frame = std::make_shared<ConversationFrame>();
  frame->format = InputFormat::request_body;
  FrameLayout layout;  // a bare array's, over the client's body
  layout.buffer = std::move(body);
  layout.entry_placement = SystemEntryPlacement::outside_tool_pairs;
  auto count = [&](std::string_view text) {
    frame->fixed += Sizes{count_code_points(text), text.size()};
    layout.fixed_json.push_back(text);
  };
  for (std::size_t k = 0; k < h.head; ++k) count(items[k]);
  for (std::string_view text : fixed) count(text);
  for (std::size_t k = 0; k < h.entry_items.size(); ++k) {
    frame->system_entries.push_back(SystemEntry{items[h.entry_items[k]], reader.entry_slots[k], ""});
    count(items[h.entry_items[k]]);
  }
  layout.original = reader.messages;
  ConversationHost::set_layout(*frame, std::move(layout));
  Conversation conversation = ConversationHost::make(frame, reader.messages);
  for (std::size_t k = 0; k < conversation.system_slots().size(); ++k)
    if (conversation.system_slots()[k] == Conversation::kUnplaced)
      return Error{fmt::format("{}.{}: an instruction or context item inside a tool pair (between a call and its output), "
                               "where compactor cannot keep it in place",
                               where, h.entry_items[k])};
  h.conversation.emplace(std::move(conversation));
  return h;
}

}  // namespace compactor
