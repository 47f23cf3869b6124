#include "import/json_lines.hpp"

#include "model/field_types.hpp"

namespace compactor {

std::optional<boost::json::value> JsonLines::next(ImportReport& report) {
  while (!rest_.empty()) {
    const std::size_t nl = rest_.find('\n');
    const std::string_view line = rest_.substr(0, nl);
    rest_.remove_prefix(nl == std::string_view::npos ? rest_.size() : nl + 1);
    ++line_no_;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    ++report.lines;
    const std::size_t begin = static_cast<std::size_t>(line.data() - all_.data());
    detail::JsonErrorAt refusal;
    std::optional<boost::json::value> read = detail::read_json(parser_, all_, {begin, begin + line.size()}, refusal);
    if (read && read->is_object()) return read;
    if (report.broken_lines.empty())
      report.first_broken_why = "line " + std::to_string(line_no_) + ": " +
                                (read ? "a line holds a JSON object, got " + std::string(detail::json_kind(*read))
                                      : refusal.what + " (byte " + std::to_string(refusal.offset) + " of the line)");
    report.broken_lines.push_back(line_no_);
  }
  return std::nullopt;
}

}  // namespace compactor
