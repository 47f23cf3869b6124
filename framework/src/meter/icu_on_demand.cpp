#include "meter/icu_on_demand.hpp"

#include "platform/library_on_demand.hpp"
#include "meter/char_classes.hpp"

#include <cstdint>
#include <vector>

// ICU's headers rename every function to <name>_<major version> (u_charType → u_charType_72);
// the names are looked up as the headers spell them.
#define COMPACTOR_ICU_NAME_(f) #f
#define COMPACTOR_ICU_NAME(f) COMPACTOR_ICU_NAME_(f)

namespace compactor::detail {
namespace {

struct Loaded {
  IcuFunctions functions;
  std::string why;
  bool ok = false;
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded out;
    LibraryOnDemand icu("libicuuc.so." U_ICU_VERSION_SHORT);
    IcuFunctions& f = out.functions;
    bool all = icu.get(f.nfkc_instance, COMPACTOR_ICU_NAME(unorm2_getNFKCInstance));
    all = icu.get(f.normalize, COMPACTOR_ICU_NAME(unorm2_normalize)) && all;
    all = icu.get(f.from_utf8, COMPACTOR_ICU_NAME(u_strFromUTF8)) && all;
    all = icu.get(f.to_utf8, COMPACTOR_ICU_NAME(u_strToUTF8)) && all;
    out.ok = all;
    out.why = icu.why();
    return out;
  }();
  return l;
}

}  // namespace

const IcuFunctions* icu_functions(std::string* why) {
  const Loaded& l = loaded();
  if (!l.ok && why != nullptr) *why = l.why;
  return l.ok ? &l.functions : nullptr;
}

namespace {

// Appends NFKC of `span` to `out`, through UTF-16 buffers kept per thread.
bool append_nfkc(const IcuFunctions& icu, std::string_view span, std::string& out) {
  if (span.size() > static_cast<std::size_t>(INT32_MAX / 4)) return false;
  thread_local std::vector<UChar> utf16, normalized;
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* nfkc = icu.nfkc_instance(&status);
  utf16.resize(span.size() + 1);  // UTF-8 → UTF-16: at most one unit per byte
  int32_t length = 0;
  icu.from_utf8(utf16.data(), static_cast<int32_t>(utf16.size()), &length, span.data(), static_cast<int32_t>(span.size()),
                &status);
  if (U_FAILURE(status)) return false;
  // NFKC can grow a text (U+FDFA becomes 18 units); ask again with the size ICU reports.
  normalized.resize(static_cast<std::size_t>(length) + 16);
  int32_t n = icu.normalize(nfkc, utf16.data(), length, normalized.data(), static_cast<int32_t>(normalized.size()), &status);
  if (status == U_BUFFER_OVERFLOW_ERROR) {
    status = U_ZERO_ERROR;
    normalized.resize(static_cast<std::size_t>(n));
    n = icu.normalize(nfkc, utf16.data(), length, normalized.data(), n, &status);
  }
  if (U_FAILURE(status)) return false;
  const std::size_t at = out.size();
  out.resize(at + static_cast<std::size_t>(n) * 3);  // UTF-16 → UTF-8: at most three bytes per unit
  int32_t bytes = 0;
  icu.to_utf8(out.data() + at, static_cast<int32_t>(out.size() - at), &bytes, normalized.data(), n, &status);
  if (U_FAILURE(status)) return false;
  out.resize(at + static_cast<std::size_t>(bytes));
  return true;
}

}  // namespace

bool nfkc_normalize(std::string_view text, std::string& out) {
  const std::uint8_t* table = nullptr;
  // The length of the code point at `pos`, and whether NFKC may change it (ASCII never).
  auto at = [&](std::size_t pos, bool& may_change) -> std::uint32_t {
    may_change = false;
    if (static_cast<unsigned char>(text[pos]) < 0x80) return 1;
    if (table == nullptr) table = char_class_table();
    std::uint32_t cp;
    std::uint32_t length = decode_utf8(text, pos, cp);
    may_change = (table[cp] & kNfkcMayChange) != 0;
    return length;
  };
  const IcuFunctions* icu = nullptr;
  constexpr std::size_t kNone = std::string_view::npos;
  std::size_t copied = 0;        // text[0, copied) is in `out` already, normalized
  std::size_t previous = kNone;  // where the code point before `pos` starts
  for (std::size_t pos = 0; pos < text.size();) {
    bool may_change;
    std::uint32_t length = at(pos, may_change);
    if (!may_change) {
      previous = pos;
      pos += length;
      continue;
    }
    // A run of code points that may change, with the starter before it (they may compose with
    // it), up to the next code point that starts a piece of its own.
    std::size_t begin = previous == kNone ? pos : previous, end = pos + length;
    for (bool more = true; end < text.size();) {
      std::uint32_t next = at(end, more);
      if (!more) break;
      end += next;
    }
    if (icu == nullptr) {
      icu = icu_functions();
      if (icu == nullptr) return false;
      out.clear();
      out.reserve(text.size() + 16);
    }
    out.append(text.substr(copied, begin - copied));
    if (!append_nfkc(*icu, text.substr(begin, end - begin), out)) return false;
    copied = end;
    previous = kNone;
    pos = end;
  }
  if (icu == nullptr) return false;  // nothing may change: `text` is in NFKC
  out.append(text.substr(copied));
  return true;
}

}  // namespace compactor::detail
