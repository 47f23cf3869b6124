// The interface every invariant checker implements. A checker compares a candidate with the
// conversation it was made from and appends what it finds; it never throws and never changes
// either. Checking one conversation on its own is checking it against itself.
#pragma once

#include "compactor/archive.hpp"
#include "compactor/conversation.hpp"
#include "compactor/factory.hpp"
#include "compactor/param_schema.hpp"
#include "compactor/protected_tail.hpp"
#include "compactor/size_unit.hpp"
#include "compactor/violation.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

struct CheckInput {
  const Conversation& before;
  const Conversation& candidate;
  ProtectedTail tail;                 // of `before`
  std::vector<std::string> requests;  // the active request's texts; empty: none
  SizeUnit unit = SizeUnit::chars;    // what no_growth compares
  bool may_touch_tail = false;        // the stage declared it may put receipt markers in the tail
  bool may_grow = false;              // the stage declared its output may be larger
  const Archive* archive = nullptr;       // this run's archive (its manifest), when there is one
};

class CheckerHost;  // the host's: names each checker it makes

class Checker {
 public:
  virtual ~Checker() = default;
  // The rule's name, what `checkers.enabled` names and every violation starts with: always the
  // name the checker was registered under (a plugin's by its CheckerInfo, never by the checker).
  std::string_view name() const { return name_; }
  virtual void check(const CheckInput& input, std::vector<Violation>& out) const = 0;

 private:
  friend class CheckerHost;
  std::string name_;
};

using CheckerPtr = std::unique_ptr<const Checker>;

using CheckerFactory = Factory<Checker>;

// What a plugin registers for each checker it provides (PluginRegistrar::add_checker). A config
// enables it in `checkers.enabled` (by name, or `{checker, plugin, params}`), beside the built-in
// ones; the host runs it after every stage with the same reporting, and an exception it throws
// becomes a violation naming it.
struct CheckerInfo {
  std::string name;         // what `checkers.enabled` names; never a built-in checker's name
  std::string description;  // one line, shown by `compactor plugins`
  ParamSchema params;       // validated by the host from the entry's `params:`
  CheckerFactory create;
};

}  // namespace compactor
