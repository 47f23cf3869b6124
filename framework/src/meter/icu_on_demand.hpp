// ICU's common library (libicuuc), opened when a token meter first needs it rather than linked:
// linked, it and its 30 MB data library cost every process about 1 ms of start (issue 17), and
// only the meters use it. The few C functions they call, looked up by ICU's versioned names.
#pragma once

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <string>

namespace compactor::detail {

struct IcuFunctions {
  decltype(&u_charType) char_type = nullptr;
  decltype(&u_hasBinaryProperty) has_binary_property = nullptr;
  decltype(&unorm2_getNFKCInstance) nfkc_instance = nullptr;
  decltype(&unorm2_normalize) normalize = nullptr;
  decltype(&u_strFromUTF8) from_utf8 = nullptr;
  decltype(&u_strToUTF8) to_utf8 = nullptr;
};

// The functions, or null with `why` set (the library or a function that could not be found).
// Opened once per process; later calls return the same answer.
const IcuFunctions* icu_functions(std::string* why = nullptr);

// `text` (valid UTF-8) in Unicode normalization form NFKC, through UTF-16 (ICU's C interface);
// false when ICU is not there or refuses the text.
bool nfkc_normalize(std::string_view text, std::string& out);

}  // namespace compactor::detail
