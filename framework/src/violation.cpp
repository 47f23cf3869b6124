#include "compactor/violation.hpp"

namespace compactor {

std::string Violation::to_string() const {
  std::string out = checker + ": ";
  if (message_index) out += "messages." + std::to_string(*message_index) + ": ";
  out += what;
  if (!stage.empty()) {
    out += " (stage " + stage;
    if (!plugin_file.empty()) out += ", plugin " + plugin_file;
    out += ")";
  }
  return out;
}

}  // namespace compactor
