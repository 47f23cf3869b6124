#include "bench/session_read.hpp"

#include "wire/input_document.hpp"

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
    s.source = s.result.report.format;
    s.model = model_of(s.result);
    s.openai = imported->api->openai_tokenizer();
    return s;
  }
  // What `run` would say of it: a body's located error rather than the importers' "no messages".
  auto body = wire::read_input_document(path, std::nullopt);
  if (!body) return body.error();
  // A form sessions are imported as (a log, a Messages API body) failed for the importers' reason.
  if (body->form->imports_sessions()) return imported.error();
  SessionRead s;
  s.result.conversation = body->request->conversation();
  s.format = body->format;
  s.source = std::string(body->form->name());  // named as --input-format names them
  s.model = body_model(path);
  s.openai = body->format->openai_tokenizer();
  return s;
}

}  // namespace compactor::bench
