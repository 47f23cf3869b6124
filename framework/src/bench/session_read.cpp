#include "bench/session_read.hpp"

#include "wire/anthropic/anthropic_messages.hpp"
#include "wire/gemini/gemini.hpp"
#include "wire/input_document.hpp"
#include "wire/openai_responses/openai_responses.hpp"

#include <boost/json.hpp>

#include <fstream>
#include <sstream>

namespace compactor::bench {

namespace {

std::string model_of(const ImportResult& imported) {
  for (const auto& c : imported.recorded_calls)
    if (!c.model.empty() && c.model != "<synthetic>") return c.model;
  return "";
}

std::string body_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(bytes.str(), ec);
  const boost::json::value* model = !ec && v.is_object() ? v.get_object().if_contains("model") : nullptr;
  return model != nullptr && model->is_string() ? std::string(model->get_string()) : std::string();
}

}  // namespace

Expected<SessionRead> read_session(const std::string& path) {
  auto imported = wire::import_session(path, std::nullopt);
  if (imported) {
    SessionRead s{std::move(imported->result), imported->format, "", "", false};
    if (!s.result.conversation) return Error{"no message to import"};
    s.source = std::string(to_string(s.result.report.format));
    s.model = model_of(s.result);
    s.openai = s.result.report.format == ImportFormat::openai || s.result.report.format == ImportFormat::codex;
    return s;
  }
  // What `run` would say of it: a body's located error rather than the importers' "no messages".
  auto body = wire::read_input_document(path, std::nullopt);
  if (!body) return body.error();
  if (body->format == &wire::anthropic_messages() || !body->imported.empty()) return imported.error();
  SessionRead s;
  s.result.conversation = body->request->conversation();
  s.format = body->format;
  // Named as --input-format names them.
  s.source = body->format == &wire::openai_responses() ? "responses" : body->format == &wire::gemini() ? "gemini" : std::string(body->format->name());
  s.model = body_model(path);
  s.openai = body->format == &wire::openai_responses();
  return s;
}

}  // namespace compactor::bench
