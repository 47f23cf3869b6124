#include "wire/input_form.hpp"

#include "wire/wire_format.hpp"

namespace compactor::wire {
namespace {

// A log turned into Anthropic messages: written back as the model writes it.
class ImportedRequest final : public WireRequest {
 public:
  explicit ImportedRequest(Conversation c) : conversation_(std::move(c)) {}
  const Conversation& conversation() const override { return conversation_; }
  Expected<std::string> write(const Conversation& compacted) const override { return compacted.serialize(); }
  bool writes_model_form() const override { return true; }

 private:
  Conversation conversation_;
};

}  // namespace

Expected<ImportedSession> InputForm::import_session(std::string, const InputSource& source) const {
  return Error{source.shown + ": " + std::string(name()) + " is not a session `import` reads"};
}

Expected<InputDocument> request_document(const WireFormat& format, std::string bytes, const std::string& source) {
  auto request = format.read(std::move(bytes), source);
  if (!request) return request.error();
  InputDocument doc;
  doc.request = std::move(*request);
  doc.format = &format;
  return doc;
}

Expected<InputDocument> imported_document(Expected<ImportResult> imported, const WireFormat& format) {
  if (!imported) return imported.error();
  const ImportReport& r = imported->report;
  if (!imported->conversation) return Error{r.source + ": no message to import"};
  InputDocument doc;
  doc.request = std::make_unique<ImportedRequest>(std::move(*imported->conversation));
  doc.format = &format;
  doc.imported = "imported " + r.source + " (" + r.format + "): " + r.summary_line();
  return doc;
}

}  // namespace compactor::wire
