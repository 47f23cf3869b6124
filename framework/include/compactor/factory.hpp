// One factory shape for everything a plugin provides: a stage, a summarizer or a checker is made
// from the params the host validated against the schema it declared (ParamSchema), and a factory
// either returns the new object or says why it cannot (an Error naming what is wrong).
#pragma once

#include "compactor/error.hpp"
#include "compactor/param_schema.hpp"

#include <functional>
#include <memory>
#include <type_traits>

namespace compactor {

class Stage;
class Summarizer;
class Checker;

template <class T>
using Factory = std::function<Expected<std::unique_ptr<T>>(const ParamValues& params)>;

namespace detail {
// The interface S implements: Stage, Summarizer or Checker.
template <class S>
using implemented_t = std::conditional_t<std::is_base_of_v<Stage, S>, Stage,
                                         std::conditional_t<std::is_base_of_v<Summarizer, S>, Summarizer, Checker>>;
}  // namespace detail

// The factory of a class constructed from its validated params (`S(const ParamValues&)`) or from
// nothing (`S()`): a Factory<Stage>, Factory<Summarizer> or Factory<Checker>, as S implements.
//   info.create = factory_of<MyStage>();
template <class S>
Factory<detail::implemented_t<S>> factory_of() {
  using Base = detail::implemented_t<S>;
  static_assert(std::is_base_of_v<Base, S>, "factory_of<S>: S must implement Stage, Summarizer or Checker");
  return [](const ParamValues& params) -> Expected<std::unique_ptr<Base>> {
    if constexpr (std::is_constructible_v<S, const ParamValues&>)
      return std::unique_ptr<Base>(std::make_unique<S>(params));
    else
      return std::unique_ptr<Base>(std::make_unique<S>());
  };
}

}  // namespace compactor
