// snip: a history of more than `max_messages` keeps its first `keep_head` messages and its newest
// ones, and the middle is archived (as JSONL, one message a line) and replaced by one marker
// message naming the receipt (snip_compact in the four-step reference design whose numbers are the
// defaults). A cut never falls inside a tool pair: the head grows to take the results of a call it
// ends with, and the tail start moves back to the assistant turn whose results it would otherwise
// begin with. The protected tail and the active request are always kept. A history that was snipped
// before keeps one marker: the old marker falls inside the new middle and is archived with it.
//
// Hysteresis: once over `max_messages` it cuts down to `keep_messages` (head, marker and newest),
// so the calls that follow only append until the count crosses `max_messages` again; cutting to
// `max_messages` would re-cut the prefix on every call. A middle too short to be worth a marker
// is a decline: nothing safe to do here, and the next stages still run.
#include "compactor/archive.hpp"
#include "compactor/plugin.hpp"
#include "compactor/summary_format.hpp"  // restore_told_before

#include <boost/json.hpp>
#include <fmt/core.h>

namespace {

using namespace compactor;

constexpr std::string_view kMarkerPrefix = "[compactor snip:";

bool is_marker(const Message& m) {
  return m.role() == Role::user && m.blocks().size() == 1 && m.blocks()[0].kind() == BlockKind::text &&
         m.blocks()[0].text().substr(0, kMarkerPrefix.size()) == kMarkerPrefix;
}

class SnipStage final : public Stage {
 public:
  explicit SnipStage(const ParamValues& p)
      : max_messages_(static_cast<std::size_t>(p.integer("max_messages"))),
        keep_head_(static_cast<std::size_t>(p.integer("keep_head"))),
        keep_messages_(p.integer("keep_messages") > 0 ? std::min(max_messages_, static_cast<std::size_t>(p.integer("keep_messages")))
                                                      : max_messages_) {}

  StageResult run(const Conversation& committed, const StageContext& context) override {
    std::size_t n = committed.size();
    if (n <= max_messages_) return StageResult::nothing_to_do();

    std::size_t head_end = std::min(keep_head_, n);
    if (head_end > 0 && committed[head_end - 1].has_tool_use())
      while (head_end < n && committed[head_end].role() == Role::user && committed[head_end].has_tool_result()) ++head_end;
    // An earlier snip's marker goes into the new middle, so there is only ever one marker.
    for (std::size_t i = 0; i <= head_end && i < n; ++i)
      if (is_marker(committed[i])) {
        head_end = i;
        break;
      }

    std::size_t keep_tail = keep_messages_ > keep_head_ + 1 ? keep_messages_ - keep_head_ - 1 : 1;
    // Cutting to max_messages (keep_messages 0): keep_head and the newest max_messages - keep_head, the
    // four-step reference design's rule, which re-cuts on every call.
    if (keep_messages_ == max_messages_) keep_tail = max_messages_ > keep_head_ ? max_messages_ - keep_head_ : 1;
    std::size_t tail_start = n > keep_tail ? n - keep_tail : 0;
    tail_start = std::min(tail_start, context.tail.begin);
    // The active request stays as it is.
    for (const std::string& request : context.requests) {
      if (request.empty()) continue;
      for (std::size_t i = head_end; i < tail_start; ++i)
        for (const Block& b : committed[i].blocks())
          if (b.kind() == BlockKind::text && b.text().find(request) != std::string_view::npos) {
            tail_start = std::min(tail_start, i);
            break;
          }
    }
    tail_start = align_cut(committed, tail_start, head_end);
    if (head_end >= tail_start || tail_start - head_end < 2)
      return StageResult::decline(fmt::format("no middle of two or more messages to cut between the head (messages.0 to "
                                              "messages.{}) and the kept newest messages", head_end == 0 ? 0 : head_end - 1));

    // The middle as JSONL, one message a line, hashed and archived from the messages' own bytes
    // (never joined in memory); hashed once: the marker's receipt is the one put() files.
    HashedBlob snapshot(committed.jsonl_pieces(head_end, tail_start));
    const std::string& receipt = snapshot.receipt();

    std::size_t count = tail_start - head_end;
    // At most 120 chars; how to restore is said here only when neither a summary nor an older
    // marker says it (snip's marker is near the head: usually the oldest).
    std::string text = fmt::format("{} {} messages archived as {}]", kMarkerPrefix, count, receipt);
    if (!restore_told_before(committed, head_end))
      text += fmt::format(" {} gives them back (JSONL, one message a line), and so for every receipt in a marker.",
                          context.how_to_restore(receipt));
    auto marker = Message::from_json(boost::json::object{
        {"role", "user"}, {"content", boost::json::array{boost::json::object{{"type", "text"}, {"text", text}}}}});
    if (!marker) return StageResult::decline("cannot build the marker: " + marker.error().message);
    // A middle no larger than the marker (in the budget's unit) is left as it is: cutting it
    // would grow the history, and the next stages may still help.
    std::uint64_t middle = 0;
    for (std::size_t i = head_end; i < tail_start; ++i) middle += committed.size_of(committed[i], context.budget.unit);
    if (committed.size_of(**marker, context.budget.unit) >= middle)
      return StageResult::decline(fmt::format("the middle (messages.{} to messages.{}, {} {}) is no larger than its marker",
                                              head_end, tail_start - 1, middle, to_string(context.budget.unit)));
    // Archive before the marker can be committed: its receipt must hold the middle.
    if (auto archived = context.archive.put(std::move(snapshot)); !archived) return StageResult::decline(archived.error().message);

    std::vector<MessagePtr> messages;
    messages.reserve(head_end + 1 + (n - tail_start));
    messages.insert(messages.end(), committed.messages().begin(), committed.messages().begin() + static_cast<std::ptrdiff_t>(head_end));
    messages.push_back(std::move(marker).value());
    messages.insert(messages.end(), committed.messages().begin() + static_cast<std::ptrdiff_t>(tail_start), committed.messages().end());
    context.log.info(fmt::format("snipped messages.{} to messages.{}", head_end, tail_start - 1));
    return StageResult::candidate(committed.with_messages(std::move(messages)));
  }

 private:
  std::size_t max_messages_, keep_head_, keep_messages_;
};

StageInfo stage_info() {
  StageInfo info;
  info.description = "archives the middle of a long history and leaves one marker message";
  info.params = {
      ParamSpec::integer("max_messages", "a history of more messages is snipped", 50).at_least(2),
      ParamSpec::integer("keep_head", "messages kept at the start", 3).at_least(1),
      ParamSpec::integer("keep_messages",
                         "messages left after a cut (head, marker, newest); 0: max_messages (re-cuts on every call)", 0)
          .at_least(0),
  };
  info.acts_when = {{StageTrigger::Kind::messages_over, "max_messages"}};
  info.create = factory_of<SnipStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("snip", "0.1.0", stage_info)
