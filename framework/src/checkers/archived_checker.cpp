// archived: nothing is lost. Every tool_result content a stage shortened or removed, every other
// block it changed and every message it dropped must be in this run's archive, under a receipt
// that the candidate names. Only the messages the stage replaced are looked at: a removed message
// is paired, in order, with the added message of the same shape (role, block kinds and ids) that
// replaced it; a removed message with no such partner was dropped.
#include "checkers/checker_support.hpp"
#include "checkers/checker_host.hpp"

#include "compactor/archive.hpp"
#include "compactor/message_edit.hpp"

#include <unordered_set>

namespace compactor::detail {
namespace {

std::string shape(const Message& m) {
  std::string s(to_string(m.role()));
  for (const Block& b : m.blocks()) {
    s += '|';
    s += std::to_string(static_cast<int>(b.kind()));
    s += b.kind() == BlockKind::tool_result ? b.tool_use_id() : b.id();
  }
  return s;
}

// Receipts named anywhere in a message's text (text blocks, string content, result content).
void collect_receipts(const Message& m, std::unordered_set<std::string>& out) {
  for (const auto& r : find_receipts(m.raw())) out.insert(r);
}

class ArchivedChecker final : public Checker {
 public:

  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    if (same_messages(in)) return;
    MessageIdentity in_before(in.before), in_candidate(in.candidate);
    std::vector<std::size_t> removed, added;
    for (std::size_t i = 0; i < in.before.size(); ++i)
      if (!in_candidate.contains(in.before.messages()[i].get())) removed.push_back(i);
    for (std::size_t i = 0; i < in.candidate.size(); ++i)
      if (!in_before.contains(in.candidate.messages()[i].get())) added.push_back(i);
    if (removed.empty()) return;

    std::unordered_set<std::string> receipts;
    for (std::size_t i : added) collect_receipts(in.candidate[i], receipts);
    // Lines of every named blob: a dropped message must be one of them (or a whole blob). Built
    // only when a whole message has to be found, since it hashes everything archived.
    std::unordered_set<std::string_view, SampledBytesHash> archived_lines;
    bool lines_built = false;
    const Archive* archive = in.archive;
    auto blob = [&](const std::string& receipt) { return archive ? archive->find(receipt) : nullptr; };
    // Snapshots hold the dropped messages in order, so first try each named blob's next line,
    // compared where the archive keeps it (no blob is read into memory whole); only a message
    // found out of order costs reading and hashing every archived line.
    struct Cursor {
      const std::string* receipt;
      std::uint64_t at, size;
    };
    std::vector<Cursor> cursors;
    if (archive != nullptr)
      for (const auto& r : receipts)
        if (auto size = archive->size_of(r)) cursors.push_back({&r, 0, *size});
    auto archived_whole = [&](const Message& m) {
      // A message's raw bytes may span lines (pretty-printed input), so match them as a prefix
      // ending at a line end rather than as one line.
      const std::uint64_t length = m.raw().size();
      for (Cursor& c : cursors) {
        const std::uint64_t rest = c.size - c.at;
        if (rest < length || (rest > length && !archive->holds(*c.receipt, c.at + length, "\n"))) continue;
        if (!archive->holds(*c.receipt, c.at, m.raw())) continue;
        c.at += rest == length ? length : length + 1;
        return true;
      }
      if (!lines_built) {
        lines_built = true;
        for (const auto& r : receipts)
          if (const std::string* bytes = blob(r)) {
            std::string_view rest = *bytes;
            archived_lines.insert(rest);
            while (!rest.empty()) {
              std::size_t nl = rest.find('\n');
              archived_lines.insert(rest.substr(0, nl));
              if (nl == std::string_view::npos) break;
              rest.remove_prefix(nl + 1);
            }
          }
      }
      return archived_lines.count(m.raw()) != 0;
    };

    std::size_t next_added = 0;
    for (std::size_t r : removed) {
      const Message& was = in.before[r];
      std::string was_shape = shape(was);
      std::size_t partner = added.size();
      for (std::size_t k = next_added; k < added.size(); ++k)
        if (shape(in.candidate[added[k]]) == was_shape) {
          partner = k;
          break;
        }
      if (partner == added.size()) {
        if (!archived_whole(was))
          out.push_back(violation(name(), r, "input messages." + std::to_string(r) +
                                                 " was dropped, but no receipt in the candidate archives it"));
        continue;
      }
      next_added = partner + 1;
      check_edit(was, in.candidate[added[partner]], added[partner], archive, archived_whole, out);
    }
  }

 private:
  template <class Whole>
  void check_edit(const Message& was, const Message& now, std::size_t index, const Archive* archive, Whole archived_whole,
                  std::vector<Violation>& out) const {
    bool other_change = was.json().size() != now.json().size();
    for (const auto& kv : was.json())
      if (kv.key() != "content" && (!now.json().contains(kv.key()) || now.json().at(kv.key()) != kv.value())) other_change = true;
    for (std::size_t b = 0; b < was.blocks().size(); ++b) {
      const Block& x = was.blocks()[b];
      const Block& y = now.blocks()[b];
      bool same = x.json() != nullptr && y.json() != nullptr ? *x.json() == *y.json() : x.text() == y.text();
      if (same) continue;
      if (x.kind() != BlockKind::tool_result) {
        other_change = true;
        continue;
      }
      // A result whose content changed: its new content must name the receipt of the old bytes.
      std::string_view old_bytes = raw_block_field(was, b, "content");
      std::string id(x.tool_use_id());
      bool found = false;
      for (const auto& r : find_receipts(raw_block_field(now, b, "content")))
        if (archive != nullptr && archive->size_of(r) == old_bytes.size() && archive->holds(r, 0, old_bytes)) found = true;
      if (!found)
        out.push_back(violation(name(), index, "tool_result " + id +
                                                   ": content was shortened or removed, but no receipt in it archives the original",
                                {id}));
    }
    if (other_change && !archived_whole(was))
      out.push_back(violation(name(), index, "a block other than tool_result content changed, but no receipt archives the original message"));
  }
};

}  // namespace

std::unique_ptr<Checker> make_archived_checker() { return CheckerHost::named(std::make_unique<ArchivedChecker>(), "archived"); }

}  // namespace compactor::detail
