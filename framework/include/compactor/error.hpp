// Errors as values. Everything that can fail at the framework or plugin boundary returns
// Expected<T>; exceptions never cross it.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace compactor {

// One human-readable sentence that already names what and where ("input.json:3:14 (byte 40):
// expected ':'"). Callers prepend context, never rewrite it.
struct Error {
  std::string message;
};

template <class T>
class Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}          // NOLINT: implicit by design
  Expected(Error error) : state_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(state_); }
  const T& value() const& { assert(ok()); return std::get<0>(state_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(state_); }

 private:
  std::variant<T, Error> state_;
};

}  // namespace compactor
