// ICU's common library (libicuuc), opened when Claude's legacy meter loads (it normalizes text to
// NFKC) rather than linked: linked, it and its 30 MB data library cost every process about 1 ms of start,
// and only NFKC needs it at run time (the Unicode classes are read at build time).
// The few C functions NFKC calls, looked up by ICU's versioned names.
#pragma once

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <string>

namespace compactor::detail {

struct IcuFunctions {
  decltype(&unorm2_getNFKCInstance) nfkc_instance = nullptr;
  decltype(&unorm2_normalize) normalize = nullptr;
  decltype(&u_strFromUTF8) from_utf8 = nullptr;
  decltype(&u_strToUTF8) to_utf8 = nullptr;
};

// The functions, or null with `why` set (the library or a function that could not be found).
// Opened once per process; later calls return the same answer.
const IcuFunctions* icu_functions(std::string* why = nullptr);

// `text` (valid UTF-8) in Unicode normalization form NFKC, into `out`: true when `out` holds it,
// false when `text` is already in NFKC or ICU is not there or refuses it. Only the spans that
// may change go through ICU (its C interface, in UTF-16): a code point without kNfkcMayChange
// (meter/char_classes.hpp) is a starter that nothing before it combines with, so NFKC of a text
// is NFKC of the pieces between such code points.
bool nfkc_normalize(std::string_view text, std::string& out);

}  // namespace compactor::detail
