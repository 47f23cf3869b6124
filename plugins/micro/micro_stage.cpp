// micro: older tool results above a size become a short marker (micro_compact in the four-step
// reference design whose numbers are the defaults). The newest `keep_recent` results stay whole,
// and so do results the model has not seen yet (those of a final user message) and everything in
// the protected tail. It works newest eligible result first, so the prefix the prompt cache holds
// changes as late as possible; with `until: target` it stops as soon as the conversation fits the
// budget's target. With `order: stale_first` what a later call superseded goes first (a read of a
// file read or written again later, the output of a command run again) and the newest read of a
// file still being edited goes last, after the failed results: an Edit needs its exact text.
//
// Every replaced content is archived first. The marker names the tool whose result it replaced
// and the path it worked on, and a failed result keeps its first line, so what the agent must not
// discover again stays in view: `[compactor archived result of Read /src/a.py, 5012 chars:
// sha256:…]`, `[compactor archived error of Bash: "make: *** [all] Error 2", 812 chars: sha256:…]`.
// How to restore is said once: in the summary when the history has one, otherwise in the oldest
// marker, which also says that a marker is not an execution result.
#include "compactor/archive.hpp"
#include "compactor/message_edit.hpp"
#include "compactor/plugin.hpp"
#include "compactor/summary_format.hpp"  // restore_told_before
#include "compactor/tool_calls.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>

namespace {

using namespace compactor;

constexpr std::string_view kMarkerPrefix = "[compactor archived ";
constexpr std::string_view kLegacyMarkerPrefix = "[compactor micro:";  // written before markers were short
const std::string kPlaceholderReceipt = "sha256:" + std::string(64, '0');

// At most `n` code points of `text` on one line: its end kept for a path, its start otherwise.
std::string clipped(std::string_view text, std::size_t n, bool keep_end) {
  std::string flat;
  for (char c : text) flat += c == '\n' || c == '\r' || c == '\t' ? ' ' : c;
  if (count_code_points(flat) <= n) return flat;
  std::size_t cut = 0, seen = 0;
  const std::size_t keep = count_code_points(flat) - (n - 1);  // code points to drop
  if (keep_end) {
    while (cut < flat.size() && seen < keep) {
      ++seen;
      ++cut;
      while (cut < flat.size() && (static_cast<unsigned char>(flat[cut]) & 0xC0) == 0x80) ++cut;
    }
    return "…" + flat.substr(cut);
  }
  while (cut < flat.size() && seen < n - 1) {
    ++seen;
    ++cut;
    while (cut < flat.size() && (static_cast<unsigned char>(flat[cut]) & 0xC0) == 0x80) ++cut;
  }
  return flat.substr(0, cut) + "…";
}

// What a marker says of the result it replaced: "result of Read /src/a.py", "error of Bash:
// \"make: *** [all] Error 2\"", or "result" when its call is not found.
std::string marker_label(const Block* call, const Block& result) {
  std::string label = result.is_error() ? "error" : "result";
  if (call == nullptr) return label;
  label += " of " + clipped(call->name(), 40, false);
  if (const auto* input = call->input(); input != nullptr && input->is_object())
    for (const char* key : {"file_path", "path", "notebook_path", "filePath", "file", "filename", "directory", "pattern", "url"})
      if (const auto* v = input->get_object().if_contains(key); v != nullptr && v->is_string() && !v->get_string().empty()) {
        label += " " + clipped(v->get_string(), 120, true);
        break;
      }
  if (!result.is_error()) return label;
  std::string_view text;
  if (const auto* c = result.content(); c != nullptr && c->is_string()) text = c->get_string();
  else if (c != nullptr && c->is_array() && !c->get_array().empty())
    if (const auto* o = c->get_array().front().if_object(); o != nullptr)
      if (const auto* t = o->if_contains("text"); t != nullptr && t->is_string()) text = t->get_string();
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start != std::string_view::npos) {
    std::string_view line = text.substr(start, text.find('\n', start) - start);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    label += ": \"" + clipped(line, 120, false) + "\"";
  }
  return label;
}

// The marker; with `restore` (how to restore its receipt), the instruction after it.
std::string marker_text(std::string_view label, std::uint64_t chars, std::string_view receipt, std::string_view restore = {}) {
  std::string marker = fmt::format("{}{}, {} chars: {}]", kMarkerPrefix, label, chars, receipt);
  if (!restore.empty())
    marker += fmt::format(" An archived result is not an execution result; {} gives it back, and so for every such marker.",
                          restore);
  return marker;
}

bool is_marker(std::string_view text) {
  return text.substr(0, kMarkerPrefix.size()) == kMarkerPrefix || text.substr(0, kLegacyMarkerPrefix.size()) == kLegacyMarkerPrefix;
}

// with_result_contents (compactor/message_edit.hpp) without copying the contents it replaces:
// the copy is built key by key in the same order, so it is the same object and the same bytes,
// but a result of many kilobytes is not copied only to be dropped.
Expected<MessagePtr> with_markers(const Message& message, const std::vector<std::pair<std::size_t, std::string>>& markers) {
  if (message.content_is_string()) return Error{"the message has string content, so no tool_result blocks"};
  for (const auto& [index, marker] : markers)
    if (index >= message.blocks().size() || message.blocks()[index].kind() != BlockKind::tool_result)
      return Error{"content." + std::to_string(index) + " is not a tool_result block"};
  boost::json::object copy;
  copy.reserve(message.json().size());
  for (const auto& field : message.json()) {
    if (field.key() != "content") {
      copy.emplace(field.key(), field.value());
      continue;
    }
    const boost::json::array& blocks = field.value().get_array();
    boost::json::array out;
    out.reserve(blocks.size());
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      auto marker = std::find_if(markers.begin(), markers.end(), [&](const auto& m) { return m.first == i; });
      if (marker == markers.end()) {
        out.push_back(blocks[i]);
        continue;
      }
      boost::json::object block;
      block.reserve(blocks[i].get_object().size() + 1);
      for (const auto& f : blocks[i].get_object())
        if (f.key() == "content") block.emplace("content", marker->second);
        else block.emplace(f.key(), f.value());
      if (!block.contains("content")) block.emplace("content", marker->second);
      out.push_back(std::move(block));
    }
    copy.emplace("content", std::move(out));
  }
  return Message::from_json(std::move(copy));
}

// An old result to mask: its block, its exact bytes (what is archived) and its size.
struct Edit {
  std::size_t block;
  std::string_view original;
  std::uint64_t chars;
  std::string label;  // what its marker says it replaced
};
using EditsByMessage = std::map<std::size_t, std::vector<Edit>>;

// The markers of one run. Each result is hashed once: its receipt names the marker (built again
// for the restore instruction, or with a message's second-round results) and the same hash goes
// to put().
class Markers {
 public:
  Markers(const Conversation& committed, const StageContext& context) : committed_(committed), context_(context) {}

  // One message's results replaced by markers (the first with the restore instruction), or
  // nullopt when that would not make the message smaller in the budget's unit: in tokens, a
  // marker's hex receipt can cost more than a short result.
  Expected<std::optional<MessagePtr>> edit(std::size_t index, const std::vector<Edit>& replacements, bool instruction) {
    std::vector<std::pair<std::size_t, std::string>> markers;
    for (std::size_t k = 0; k < replacements.size(); ++k) {
      const Edit& e = replacements[k];
      markers.emplace_back(e.block, marker_text(e.label, e.chars, receipt(e), instruction && k == 0 ? context_.how_to_restore(receipt(e)) : ""));
    }
    auto edited = with_markers(*committed_.messages()[index], markers);
    if (!edited) return Error{"cannot edit messages." + std::to_string(index) + ": " + edited.error().message};
    const SizeUnit unit = context_.budget.unit;
    if (committed_.size_of(**edited, unit) >= committed_.size_of(committed_[index], unit)) return std::optional<MessagePtr>();
    return std::optional<MessagePtr>(std::move(edited).value());
  }

  // Archived before a marker can be committed: its receipt must hold the original.
  std::optional<Error> archive(const std::vector<Edit>& edits) {
    for (const Edit& e : edits) {
      Hashed& h = hashed_[e.original.data()];
      if (!h.blob) continue;  // archived already
      auto put = context_.archive.put(std::move(*h.blob));
      h.blob.reset();
      if (!put) return put.error();
    }
    return std::nullopt;
  }

 private:
  struct Hashed {
    std::optional<HashedBlob> blob;  // until archived
    std::string receipt;
  };
  const std::string& receipt(const Edit& e) {
    Hashed& h = hashed_[e.original.data()];
    if (h.receipt.empty()) {
      h.blob.emplace(std::vector<std::string_view>{e.original});  // the committed message's bytes, not copied
      h.receipt = h.blob->receipt();
    }
    return h.receipt;
  }

  const Conversation& committed_;
  const StageContext& context_;
  std::map<const char*, Hashed> hashed_;  // by the result's bytes in the committed history
};

// The tool_use a result answers: in the message before the result's (the pairing rule).
const Block* call_of(const Conversation& c, std::size_t message, std::string_view id) {
  if (message == 0) return nullptr;
  for (const Block& b : c[message - 1].blocks())
    if (b.kind() == BlockKind::tool_use && b.id() == id) return &b;
  return nullptr;
}

// The order in which results go: stale ones first, then the others, failed ones after them, and
// last the newest read of a file still being edited (an Edit needs its exact text).
enum Round : std::size_t { kStale, kOrdinary, kFailed, kBeingEdited, kRounds };

// Which calls a later call made stale, by tool_use id. A call on a file (a read, a write; an edit
// only changes part of it) supersedes every earlier call on that file; a call of the same tool
// with the same input (a command run again) supersedes the earlier one. The newest read of a file
// that an edit follows is still being edited.
class Supersession {
 public:
  Supersession(const Conversation& c, const ToolNames& edit_tools) {
    struct CallAt {
      const Block* call;
      std::vector<std::string> files;
      bool edit;
    };
    std::vector<CallAt> calls;
    for (std::size_t i = 0; i < c.size(); ++i)
      for (const Block& b : c[i].blocks())
        if (b.kind() == BlockKind::tool_use) {
          CallAt at{&b, files_patched(b), edit_tools.contains(b.name())};
          if (std::string_view f = file_of(b); !f.empty()) at.files.emplace_back(f);
          calls.push_back(std::move(at));
        }
    std::map<std::string, std::size_t> last_whole, last_edit, last_same;  // by file; by tool and input
    for (std::size_t k = 0; k < calls.size(); ++k) {
      for (const std::string& f : calls[k].files) (calls[k].edit ? last_edit : last_whole)[f] = k;
      if (calls[k].files.empty() && calls[k].call->input() != nullptr)
        last_same[std::string(calls[k].call->name()) + "\n" + boost::json::serialize(*calls[k].call->input())] = k;
    }
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const std::string id(calls[k].call->id());
      for (const std::string& f : calls[k].files) {
        auto whole = last_whole.find(f), edit = last_edit.find(f);
        if (whole != last_whole.end() && whole->second > k) stale_.insert(id);
        else if (!calls[k].edit && edit != last_edit.end() && edit->second > k) being_edited_.insert(id);
      }
      if (calls[k].files.empty() && calls[k].call->input() != nullptr &&
          last_same.at(std::string(calls[k].call->name()) + "\n" + boost::json::serialize(*calls[k].call->input())) > k)
        stale_.insert(id);
    }
  }
  bool stale(std::string_view id) const { return stale_.count(std::string(id)) != 0; }
  bool being_edited(std::string_view id) const { return being_edited_.count(std::string(id)) != 0; }

 private:
  std::set<std::string> stale_, being_edited_;
};

class MicroStage final : public Stage {
 public:
  explicit MicroStage(const ParamValues& p)
      : keep_recent_(static_cast<std::size_t>(p.integer("keep_recent"))),
        min_chars_(static_cast<std::uint64_t>(p.integer("min_chars"))),
        until_target_(p.string("until") == "target"),
        stale_first_(p.string("order") == "stale_first"),
        never_(p.string("never")),
        edit_tools_(p.string("edit_tools")) {}

  StageResult run(const Conversation& committed, const StageContext& context) override {
    auto rounds = results_to_mask(committed, context);
    if (std::all_of(rounds.begin(), rounds.end(), [](const EditsByMessage& r) { return r.empty(); })) return StageResult::nothing_to_do();

    std::vector<MessagePtr> messages = committed.messages();
    std::uint64_t size = context.size(committed);
    std::size_t replaced = 0;
    Markers markers(committed, context);
    std::optional<std::size_t> oldest;  // the oldest message edited
    EditsByMessage done;                // what was replaced, by message
    for (auto* round : {&rounds[kStale], &rounds[kOrdinary], &rounds[kFailed], &rounds[kBeingEdited]})
      for (auto it = round->rbegin(); it != round->rend(); ++it) {  // newest first
        auto [index, replacements] = *it;
        if (until_target_ && size <= context.budget.target) break;
        // A message whose other results were replaced in the first round: all of them together.
        if (auto earlier = done.find(index); earlier != done.end())
          replacements.insert(replacements.begin(), earlier->second.begin(), earlier->second.end());
        std::sort(replacements.begin(), replacements.end(), [](const Edit& a, const Edit& b) { return a.block < b.block; });
        auto edited = markers.edit(index, replacements, false);
        if (!edited) return StageResult::decline(edited.error().message);
        if (!*edited) continue;
        if (auto failed = markers.archive(it->second)) return StageResult::decline(failed->message);
        size = size - committed.size_of(*messages[index], context.budget.unit) + committed.size_of(***edited, context.budget.unit);
        messages[index] = std::move(**edited);
        replaced += it->second.size();
        done[index] = std::move(replacements);
        oldest = std::min(oldest.value_or(index), index);
      }
    // The oldest marker says how to restore, unless the summary or an older marker already does.
    if (oldest && !restore_told_before(committed, *oldest)) {
      auto told = markers.edit(*oldest, done.at(*oldest), true);
      if (!told) return StageResult::decline(told.error().message);
      if (*told) messages[*oldest] = std::move(**told);
    }
    context.log.info(fmt::format("replaced {} tool result(s) with receipt markers", replaced));
    return StageResult::candidate(committed.with_messages(std::move(messages)));
  }

 private:
  // The results worth masking, by message: all but the `keep_recent` newest, before the protected
  // tail and not unseen, over `min_chars` and longer than their marker. Failed results (is_error)
  // are what the agent must not re-discover: apart, masked in a second round, only when masking
  // the others does not reach the target.
  // With `order: stale_first`, results a later call superseded go first and the newest read of a
  // file still being edited last; a `never` tool's results are never masked.
  std::array<EditsByMessage, kRounds> results_to_mask(const Conversation& committed, const StageContext& context) const {
    std::vector<std::pair<std::size_t, std::size_t>> results;  // message, block
    for (std::size_t i = 0; i < committed.size(); ++i) {
      const auto& blocks = committed[i].blocks();
      for (std::size_t b = 0; b < blocks.size(); ++b)
        if (blocks[b].kind() == BlockKind::tool_result) results.emplace_back(i, b);
    }
    std::array<EditsByMessage, kRounds> rounds;
    if (results.size() <= keep_recent_) return rounds;
    std::optional<Supersession> superseded;
    if (stale_first_) superseded.emplace(committed, edit_tools_);
    results.resize(results.size() - keep_recent_);
    // A final user message holding results: the model has not seen them yet.
    std::size_t unseen = committed.size();
    if (committed[committed.size() - 1].role() == Role::user && committed[committed.size() - 1].has_tool_result())
      unseen = committed.size() - 1;
    const std::size_t limit = std::min(context.tail.begin, unseen);
    for (const auto& [message, b] : results) {
      if (message >= limit) continue;
      const Block& block = committed[message].blocks()[b];
      const boost::json::value* content = block.content();
      if (content != nullptr && content->is_string() && is_marker(content->get_string())) continue;
      std::uint64_t chars = result_content_chars(block);
      if (chars <= min_chars_) continue;
      const Block* call = call_of(committed, message, block.tool_use_id());
      if (call != nullptr && never_.contains(call->name())) continue;
      std::string label = marker_label(call, block);
      // A marker must save space; every receipt has the same length, so a placeholder one tells.
      if (count_code_points(marker_text(label, chars, kPlaceholderReceipt)) >= chars) continue;
      Round round = block.is_error() && until_target_ ? kFailed : kOrdinary;
      if (superseded && superseded->stale(block.tool_use_id())) round = kStale;
      else if (superseded && superseded->being_edited(block.tool_use_id())) round = kBeingEdited;
      rounds[round][message].push_back({b, raw_block_field(committed[message], b, "content"), chars, std::move(label)});
    }
    return rounds;
  }

  std::size_t keep_recent_;
  std::uint64_t min_chars_;
  bool until_target_;
  bool stale_first_;
  ToolNames never_, edit_tools_;
};

StageInfo stage_info() {
  StageInfo info;
  info.description = "replaces older tool results above a size with a short marker";
  info.params = {
      ParamSpec::integer("keep_recent", "how many of the newest tool results stay whole", 3).at_least(0),
      ParamSpec::integer("min_chars", "results of at most this many chars stay whole", 110).at_least(0),
      ParamSpec::choice("until", "all: every eligible result; target: stop once the budget target is met", "all",
                        {"all", "target"}),
      ParamSpec::choice("order",
                        "newest: newest first, failed ones last; stale_first: results a later call superseded first, the newest "
                        "read of a file still being edited last",
                        "newest", {"newest", "stale_first"}),
      ParamSpec::string("never", "tools whose results are never masked (space-separated; a trailing * matches a prefix)", ""),
      ParamSpec::string("edit_tools", "tools that change part of a file (they do not make its read stale; stale_first)",
                        "Edit MultiEdit NotebookEdit apply_patch replace edit"),
  };
  info.create = factory_of<MicroStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("micro", "0.1.0", stage_info)
