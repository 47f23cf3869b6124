// What an importer hands to the repairs every import goes through (importers.cpp): the Anthropic
// messages it assembled, each with the input line (or index) it
// came from. The repairs make them a history the Messages API accepts, every change counted in
// the report.
#pragma once

#include "import/importers.hpp"

#include <boost/json/array.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace compactor {

struct ImportDraft {
  Role role = Role::user;
  boost::json::array content;
  std::size_t line = 0;
};

// `unit` names what `line` counts in repair details ("line", "message"); `system`, when given, is
// the request body's system prompt.
ImportResult finish_import(std::vector<ImportDraft> drafts, ImportReport report, std::string_view unit, const std::string& system = "");

}  // namespace compactor
