#include "meter/icu_on_demand.hpp"

#include <dlfcn.h>

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
    bool all = get(f.char_type, COMPACTOR_ICU_NAME(u_charType));
    all = get(f.has_binary_property, COMPACTOR_ICU_NAME(u_hasBinaryProperty)) && all;
    all = get(f.nfkc_instance, COMPACTOR_ICU_NAME(unorm2_getNFKCInstance)) && all;
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

bool nfkc_normalize(std::string_view text, std::string& out) {
  const IcuFunctions* icu = icu_functions();
  if (icu == nullptr || text.size() > static_cast<std::size_t>(INT32_MAX / 4)) return false;
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* nfkc = icu->nfkc_instance(&status);
  // UTF-8 → UTF-16: at most one unit per byte.
  std::vector<UChar> utf16(text.size() + 1);
  int32_t length = 0;
  icu->from_utf8(utf16.data(), static_cast<int32_t>(utf16.size()), &length, text.data(), static_cast<int32_t>(text.size()),
                 &status);
  if (U_FAILURE(status)) return false;
  // NFKC can grow a string (U+FDFA becomes 18 units); ask again with the size ICU reports.
  std::vector<UChar> normalized(static_cast<std::size_t>(length) + 16);
  int32_t n = icu->normalize(nfkc, utf16.data(), length, normalized.data(), static_cast<int32_t>(normalized.size()), &status);
  if (status == U_BUFFER_OVERFLOW_ERROR) {
    status = U_ZERO_ERROR;
    normalized.resize(static_cast<std::size_t>(n));
    n = icu->normalize(nfkc, utf16.data(), length, normalized.data(), n, &status);
  }
  if (U_FAILURE(status)) return false;
  // UTF-16 → UTF-8: at most three bytes per unit.
  out.resize(static_cast<std::size_t>(n) * 3);
  int32_t bytes = 0;
  icu->to_utf8(out.data(), static_cast<int32_t>(out.size()), &bytes, normalized.data(), n, &status);
  if (U_FAILURE(status)) return false;
  out.resize(static_cast<std::size_t>(bytes));
  return true;
}

}  // namespace compactor::detail
