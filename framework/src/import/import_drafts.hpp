// What an importer in a file of its own hands to the repairs every import goes through
// (importers.cpp): the Anthropic messages it assembled, each with the input line (or index) it
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

// `unit` names what `line` counts in repair details ("line", "message").
ImportResult finish_import(std::vector<ImportDraft> drafts, ImportReport report, std::string_view unit);

}  // namespace compactor
