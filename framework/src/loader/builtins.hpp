// What is compiled into the host, registered through the same registry as a plugin's stages,
// summarizers and checkers (PluginRegistry::add_builtin): the extractive summarizer, and the
// built-in checkers in the order they run, each with its traits.
#pragma once

namespace compactor {

class PluginRegistry;

// Called once, by PluginRegistry::instance().
void register_builtins(PluginRegistry& registry);

}  // namespace compactor
