#include "import/log_time.hpp"

#include <chrono>

namespace compactor {

namespace {

// `n` digits at `at`, or nothing.
std::optional<int> digits(std::string_view text, std::size_t at, std::size_t n) {
  if (at + n > text.size()) return std::nullopt;
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

}  // namespace

// Hand-written: g++ 12's <chrono> has no std::chrono::parse, and the shape is fixed; the civil date
// goes through year_month_day, which checks it.
std::optional<std::int64_t> parse_log_time(std::string_view text) {
  auto y = digits(text, 0, 4), mo = digits(text, 5, 2), d = digits(text, 8, 2);
  auto h = digits(text, 11, 2), mi = digits(text, 14, 2), s = digits(text, 17, 2);
  if (!y || !mo || !d || !h || !mi || !s || text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != ' ') ||
      text[13] != ':' || text[16] != ':' || *h > 23 || *mi > 59 || *s > 60)
    return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year{*y}, std::chrono::month{static_cast<unsigned>(*mo)},
                                         std::chrono::day{static_cast<unsigned>(*d)}};
  if (!date.ok()) return std::nullopt;
  std::size_t at = 19;
  std::int64_t ms = 0;
  if (at < text.size() && text[at] == '.') {  // a fraction: its first three digits are milliseconds
    std::int64_t scale = 100;
    for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, scale /= 10) ms += (text[at] - '0') * scale;
  }
  std::int64_t offset_min = 0;
  if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    auto oh = digits(text, at + 1, 2), om = digits(text, at + 4, 2);
    if (!oh || !om || text[at + 3] != ':') return std::nullopt;
    offset_min = (text[at] == '+' ? 1 : -1) * (*oh * 60 + *om);
    at += 6;
  } else if (at < text.size() && text[at] == 'Z') {
    ++at;
  }
  if (at != text.size()) return std::nullopt;
  const std::int64_t days = std::chrono::sys_days{date}.time_since_epoch().count();
  return ((days * 24 + *h) * 60 + *mi - offset_min) * 60000 + *s * 1000 + ms;
}

}  // namespace compactor
