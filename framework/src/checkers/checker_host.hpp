// What only the host does with a checker: give it its name. A checker's name() is the name it was
// made under (a built-in rule's, or the one a plugin registered it as), never its own say, so no
// checker can report under another rule's name.
#pragma once

#include "compactor/checker.hpp"

#include <memory>
#include <string>

namespace compactor {

class CheckerHost {
 public:
  template <class C>
  static std::unique_ptr<C> named(std::unique_ptr<C> checker, std::string name) {
    if (checker != nullptr) checker->name_ = std::move(name);
    return checker;
  }
};

}  // namespace compactor
