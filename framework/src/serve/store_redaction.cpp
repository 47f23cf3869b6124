#include "serve/store_redaction.hpp"

#include <array>
#include <string_view>

namespace compactor::serve {
namespace {

constexpr std::string_view kStore = "<store>";
constexpr std::string_view kArchive = "<archive>";

void replace_all(std::string& text, std::string_view what, std::string_view with) {
  if (what.empty()) return;
  for (std::size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += with.size()) text.replace(at, what.size(), with);
}

// Where a URL written inside a sentence ends: white space, a quote, a closing bracket or a comma.
bool ends_url(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\'' || c == ')' || c == ']' || c == ',' || c == '>';
}

void redact_urls(std::string& text) {
  for (std::string_view scheme : std::array<std::string_view, 3>{"redis://", "rediss://", "unix://"})
    for (std::size_t at = 0; (at = text.find(scheme, at)) != std::string::npos; at += kStore.size()) {
      std::size_t end = at + scheme.size();
      while (end < text.size() && !ends_url(text[end])) ++end;
      // The sentence's own punctuation after it ("redis://h:6379/0: cannot connect") stays.
      while (end > at + scheme.size() && (text[end - 1] == ':' || text[end - 1] == '.' || text[end - 1] == ';')) --end;
      text.replace(at, end - at, kStore);
    }
}

}  // namespace

StoreRedaction::StoreRedaction(const StoreConfig& store, std::string archive_dir) : archive_dir_(std::move(archive_dir)) {
  if (store.kind != StoreConfig::Kind::redis) return;
  socket_ = store.socket;
  if (socket_.empty()) {
    const bool v6 = store.host.find(':') != std::string::npos;
    address_ = (v6 ? "[" + store.host + "]" : store.host) + ":" + std::to_string(store.port);
  }
}

std::string StoreRedaction::operator()(std::string text) const {
  redact_urls(text);
  replace_all(text, socket_, kStore);
  replace_all(text, address_, kStore);
  // Trailing separators are left out: a folder's name is hidden wherever it is written.
  std::string_view folder = archive_dir_;
  while (folder.size() > 1 && folder.back() == '/') folder.remove_suffix(1);
  if (folder.size() > 1) replace_all(text, folder, kArchive);
  return text;
}

}  // namespace compactor::serve
