// One plugin per provider, from the same code: compactor_summarizer_anthropic.so and
// compactor_summarizer_openai.so, each registering the kind it is named for (so `kind:` finds it).
#include "model_summarizer.hpp"

#include "compactor/plugin.hpp"

namespace {

void register_summarizer(compactor::PluginRegistrar& registrar) {
  using compactor::http_summary::Provider;
  registrar.add_summarizer(compactor::http_summary::model_summarizer_info(
      std::string_view(COMPACTOR_HTTP_PROVIDER) == "anthropic" ? Provider::anthropic : Provider::openai));
}

}  // namespace

COMPACTOR_PLUGIN(COMPACTOR_HTTP_PROVIDER "_summarizer", "0.1.0", "summarizer:" COMPACTOR_HTTP_PROVIDER, register_summarizer)
