// order: the messages a stage keeps stay in their order. A kept message (the same object, or the
// same bytes) must come after every kept message that came before it in the input; a replaced
// message stays in its place because whatever is around it keeps its order. Swapping two whole
// tool exchanges passes every pairing rule, and changes what the model reads happened first.
#include "checkers/checker_support.hpp"
#include "checkers/checker_host.hpp"

#include <optional>
#include <string_view>
#include <unordered_map>

namespace compactor::detail {
namespace {

class OrderChecker final : public Checker {
 public:
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    if (same_messages(in)) return;
    const auto& before = in.before.messages();
    std::unordered_map<const Message*, std::size_t> by_object;
    by_object.reserve(before.size() * 2);
    for (std::size_t i = 0; i < before.size(); ++i) by_object.emplace(before[i].get(), i);
    // Built only if a candidate message is not one of the input's objects: same bytes, in order.
    std::unordered_map<std::string_view, std::vector<std::size_t>, SampledBytesHash> by_bytes;
    bool bytes_built = false;
    std::optional<std::size_t> last;  // the input index of the latest kept message so far
    const auto& candidate = in.candidate.messages();
    for (std::size_t k = 0; k < candidate.size(); ++k) {
      std::optional<std::size_t> index;
      if (auto it = by_object.find(candidate[k].get()); it != by_object.end()) {
        index = it->second;
      } else {
        if (!bytes_built) {
          for (std::size_t i = before.size(); i > 0; --i) by_bytes[before[i - 1]->raw()].push_back(i - 1);
          bytes_built = true;
        }
        // Of identical messages, the first not before the latest kept one (else the latest, which
        // is then out of order).
        if (auto same = by_bytes.find(candidate[k]->raw()); same != by_bytes.end()) {
          index = same->second.front();
          for (auto i = same->second.rbegin(); i != same->second.rend(); ++i)
            if (!last || *i > *last) {
              index = *i;
              break;
            }
        }
      }
      if (!index) continue;  // a new message (a marker, a summary): it has no order to keep
      if (last && *index <= *last) {
        out.push_back(violation(name(), k,
                                "input messages." + std::to_string(*index) + " is kept after input messages." +
                                    std::to_string(*last) + ", which followed it; kept messages must stay in their order"));
        return;  // one violation says it; the rest follows from it
      }
      last = index;
    }
  }
};

}  // namespace

std::unique_ptr<Checker> make_order_checker() { return CheckerHost::named(std::make_unique<OrderChecker>(), "order"); }

}  // namespace compactor::detail
