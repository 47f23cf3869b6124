#include "wire/array_spans.hpp"

#include "model/json_scanner.hpp"

#include <string>

namespace compactor::wire {

std::optional<ArraySpans> array_member_spans(std::string_view body, std::string_view key) {
  std::optional<ArraySpans> found;
  const std::size_t open = detail::skip_json_space(body, 0);
  bool walked_items = true;
  const bool walked = detail::for_each_json_member(body, open, [&](const detail::JsonMember& m) {
    if (m.key != key || body[m.value.begin] != '[') return;
    ArraySpans spans;
    spans.open = m.value.begin;
    spans.close = m.value.end - 1;
    walked_items = detail::for_each_json_element(body, m.value.begin, [&](detail::JsonSpan item) {
      spans.items.push_back(body.substr(item.begin, item.end - item.begin));
    });
    found = std::move(spans);  // a later duplicate key wins, as in a parse
  });
  if (!walked || !walked_items) return std::nullopt;
  return found;
}

bool is_whole_bare_array(const ArraySpans& spans, std::string_view wrapped, std::size_t prefix_size) {
  constexpr std::string_view kSpace = " \t\r\n";
  return spans.open == wrapped.find_first_not_of(kSpace, prefix_size) && !wrapped.empty() &&
         wrapped.find_first_not_of(kSpace, spans.close + 1) == wrapped.size() - 1;
}

}  // namespace compactor::wire
