#include "meter/char_classes.hpp"

#include "meter/icu_on_demand.hpp"

#include <memory>

namespace compactor::detail {
namespace {

std::uint8_t classify(const IcuFunctions& icu, UChar32 c) {
  std::uint8_t k = 0;
  switch (icu.char_type(c)) {
    case U_UPPERCASE_LETTER:
    case U_TITLECASE_LETTER: k = kLetter | kUpperish; break;
    case U_LOWERCASE_LETTER: k = kLetter | kLowerish; break;
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER: k = kLetter | kUpperish | kLowerish; break;
    case U_NON_SPACING_MARK:
    case U_ENCLOSING_MARK:
    case U_COMBINING_SPACING_MARK: k = kMark | kUpperish | kLowerish; break;
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER: k = kNumber; break;
    default: break;
  }
  if (icu.has_binary_property(c, UCHAR_WHITE_SPACE)) k |= kSpace;
  if (c == '\r' || c == '\n') k |= kNewline;
  return k;
}

}  // namespace

const std::uint8_t* char_class_table() {
  static const std::unique_ptr<std::uint8_t[]> table = [] {
    auto t = std::make_unique<std::uint8_t[]>(0x110000);
    // Tokenizer::load refuses to load without ICU, so a meter never counts with an empty table.
    if (const IcuFunctions* icu = icu_functions())
      for (UChar32 c = 0; c < 0x110000; ++c) t[static_cast<std::size_t>(c)] = classify(*icu, c);
    return t;
  }();
  return table.get();
}

}  // namespace compactor::detail
