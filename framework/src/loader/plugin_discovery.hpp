// Where stage `x` is looked for: the file `compactor_stage_x.so`, in order, in the pipeline
// entry's `plugin:` path (relative to the config file), the config's `plugin_dirs`, `plugins/`
// beside the config, COMPACTOR_PLUGIN_PATH, then the plugin folder of the build or install tree
// the binary runs from.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace compactor {

std::string stage_file_name(const std::string& stage);  // "compactor_stage_<stage>.so"
std::string summarizer_file_name(const std::string& kind);  // "compactor_summarizer_<kind>.so"
std::string checker_file_name(const std::string& name);     // "compactor_checker_<name>.so"

// The first file of that name in `dirs`, or nothing.
std::optional<std::string> find_plugin_file(const std::string& file_name, const std::vector<std::string>& dirs);

// The folders in the environment variable COMPACTOR_PLUGIN_PATH (colon-separated), in order.
std::vector<std::string> env_plugin_dirs();

// The build tree's `build/plugins` (beside `build/bin`), or an install's `lib/compactor/plugins`:
// beside the running binary, then beside the framework library (what a test kit test finds).
std::vector<std::string> default_plugin_dirs();

// The first `compactor_stage_<stage>.so` in `dirs`, or nothing.
std::optional<std::string> find_stage_file(const std::string& stage, const std::vector<std::string>& dirs);

// Every compactor_stage_*.so in `dirs`, first occurrence of each file name, in search order.
std::vector<std::string> list_stage_files(const std::vector<std::string>& dirs);
// The same for any file name prefix ("compactor_summarizer_").
std::vector<std::string> list_plugin_files(const std::vector<std::string>& dirs, const std::string& prefix);

}  // namespace compactor
