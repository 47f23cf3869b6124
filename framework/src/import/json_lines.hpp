// A JSON Lines log read line by line under the conversation reader's rules (no key twice, the
// same depth limit), by one parser over the file's bytes: what the Claude Code and Gemini CLI
// importers share.
#pragma once

#include "import/importers.hpp"
#include "model/json_scanner.hpp"

#include <boost/json/value.hpp>

#include <optional>
#include <string_view>

namespace compactor {

class JsonLines {
 public:
  explicit JsonLines(std::string_view bytes) : all_(bytes), rest_(bytes), parser_(bytes) {}

  // The next line that holds a JSON object. Blank lines are passed over; a line that is not an
  // object is counted in `report` (its number; why, for the first) and passed over. Nothing at
  // the end of the file.
  std::optional<boost::json::value> next(ImportReport& report);
  std::size_t line_no() const { return line_no_; }  // 1-based, of the line `next` returned

 private:
  std::string_view all_, rest_;
  detail::ValueParser parser_;
  std::size_t line_no_ = 0;
};

}  // namespace compactor
