#include "meter/icu_on_demand.hpp"

#include "meter/char_classes.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <mutex>
#include <type_traits>
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
  static Loaded l;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* library = "libicuuc.so." U_ICU_VERSION_SHORT;
    void* handle = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = ::dlerror();
      l.why = std::string("cannot open ICU (") + library + "): " + (e != nullptr ? e : "unknown error");
      return;
    }
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, name));
      if (fn == nullptr && l.why.empty()) l.why = std::string("ICU (") + library + ") has no function " + name;
      return fn != nullptr;
    };
    IcuFunctions& f = l.functions;
    bool all = get(f.nfkc_instance, COMPACTOR_ICU_NAME(unorm2_getNFKCInstance));
    all = get(f.normalize, COMPACTOR_ICU_NAME(unorm2_normalize)) && all;
    all = get(f.from_utf8, COMPACTOR_ICU_NAME(u_strFromUTF8)) && all;
    all = get(f.to_utf8, COMPACTOR_ICU_NAME(u_strToUTF8)) && all;
    l.ok = all;  // the library stays open: its functions are used until the process ends
  });
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
  const IcuFunctions* icu = nullptr;
  constexpr std::size_t kNone = std::string_view::npos;
  std::size_t copied = 0;          // text[0, copied) is in `out` already, normalized
  std::size_t previous = kNone;    // where the code point before `pos` starts
  for (std::size_t pos = 0; pos < text.size();) {
    std::uint32_t cp = static_cast<unsigned char>(text[pos]), length = 1;
    if (cp >= 0x80) {
      if (table == nullptr) table = char_class_table();
      length = decode_utf8(text, pos, cp);
    }
    if (cp < 0x80 || !(table[cp] & kNfkcMayChange)) {
      previous = pos;
      pos += length;
      continue;
    }
    // A run of code points that may change, with the starter before it (they may compose with
    // it), up to the next code point that starts a piece of its own.
    std::size_t begin = previous == kNone ? pos : previous, end = pos + length;
    while (end < text.size() && static_cast<unsigned char>(text[end]) >= 0x80) {
      std::uint32_t next;
      std::uint32_t next_length = decode_utf8(text, end, next);
      if (!(table[next] & kNfkcMayChange)) break;
      end += next_length;
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
