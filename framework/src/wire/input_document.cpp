#include "wire/input_document.hpp"

#include "model/conversation_reader.hpp"

#include <algorithm>

namespace compactor::wire {
namespace {

bool used_for(const InputForm& form, FormUse use) { return use == FormUse::requests || form.imports_sessions(); }

std::vector<const InputForm*> forms(FormUse use) {
  std::vector<const InputForm*> out;
  for (const WireFormat* f : wire_formats())
    for (const InputForm* form : f->input_forms())
      if (used_for(*form, use)) out.push_back(form);
  return out;
}

const InputForm* form_named(std::string_view name, FormUse use) {
  for (const InputForm* form : forms(use))
    if (form->name() == name) return form;
  return nullptr;
}

InputSource source_of(const std::string& path, bool detected, bool sidechain) {
  InputSource source;
  source.shown = path == "-" ? "<stdin>" : path;
  source.file_name = source.shown.substr(source.shown.find_last_of('/') + 1);
  source.detected = detected;
  source.sidechain = sidechain;
  return source;
}

// The form the file is read as: the one named, else the one detection finds in its bytes.
Expected<const InputForm*> form_for(const std::string& bytes, const InputSource& source, const std::optional<std::string>& format,
                                    FormUse use) {
  if (auto bad = input_format_error(format, use)) return Error{*bad};
  if (source.detected) return &detect_input_form(bytes, source.file_name, use);
  return form_named(*format, use);
}

}  // namespace

std::vector<std::string> input_format_names(FormUse use) {
  std::vector<std::string> names;
  for (const InputForm* form : forms(use))
    if (std::find(names.begin(), names.end(), form->name()) == names.end()) names.emplace_back(form->name());
  std::sort(names.begin(), names.end());
  names.insert(names.begin(), "auto");
  return names;
}

std::optional<std::string> input_format_error(const std::optional<std::string>& format, FormUse use) {
  const auto names = input_format_names(use);
  if (!format || std::find(names.begin(), names.end(), *format) != names.end()) return std::nullopt;
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i) list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return "--input-format takes " + list + ", got \"" + *format + "\"";
}

const InputForm& detect_input_form(std::string_view bytes, std::string_view file_name, FormUse use) {
  struct Rule {
    Detection detection;
    const InputForm* form;
  };
  std::vector<Rule> rules;
  for (const InputForm* form : forms(use))
    for (const Detection& d : form->detections())
      if (use == FormUse::requests || d.for_sessions) rules.push_back({d, form});
  std::stable_sort(rules.begin(), rules.end(), [](const Rule& a, const Rule& b) { return a.detection.order < b.detection.order; });
  for (const Rule& rule : rules)
    if (rule.detection.claims(bytes, file_name)) return *rule.form;
  return *wire_formats().front()->input_forms().front();
}

Expected<InputDocument> read_input_document(const std::string& path, const std::optional<std::string>& format) {
  if (auto bad = input_format_error(format)) return Error{*bad};
  auto read = read_input_bytes(path);
  if (!read) return read.error();
  const InputSource source = source_of(path, format.value_or("auto") == "auto", false);
  auto form = form_for(*read, source, format, FormUse::requests);
  if (!form) return form.error();
  auto doc = (*form)->read(std::move(read).value(), source);
  if (doc) doc->form = *form;
  return doc;
}

Expected<ImportedSession> import_session(const std::string& path, const std::optional<std::string>& format, bool sidechain) {
  if (auto bad = input_format_error(format, FormUse::sessions)) return Error{*bad};
  auto read = read_input_bytes(path);
  if (!read) return read.error();
  const InputSource source = source_of(path, format.value_or("auto") == "auto", sidechain);
  auto form = form_for(*read, source, format, FormUse::sessions);
  if (!form) return form.error();
  return (*form)->import_session(std::move(read).value(), source);
}

}  // namespace compactor::wire
