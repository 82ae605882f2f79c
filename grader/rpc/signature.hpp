// What both sides know about a lab function from its type alone: its result and which of its
// parameters are outputs. A non-const lvalue reference (course::Tensor& output) is sent to the
// worker and copied back after the call; everything else is input only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <vector>

namespace grader::rpc {

template <class F>
struct Signature;

template <class R, class... A>
struct Signature<R (*)(A...)> {
  using result = R;
  using params = std::tuple<A...>;
  static constexpr std::size_t arity = sizeof...(A);
};
template <class R, class... A>
struct Signature<R (*)(A...) noexcept> : Signature<R (*)(A...)> {};

/// The parameter's type without reference and const: what travels.
template <class A>
using value_t = std::remove_cv_t<std::remove_reference_t<A>>;

/// True for parameters whose value comes back after the call.
template <class A>
constexpr bool is_output_v = std::is_lvalue_reference_v<A> && !std::is_const_v<std::remove_reference_t<A>>;

template <class A>
constexpr void check_parameter() {
  static_assert(!std::is_pointer_v<value_t<A>>, "raw pointers cannot cross the process boundary: use a harness");
  static_assert(!std::is_rvalue_reference_v<A>, "rvalue-reference parameters are not supported");
}

// ---------------------------------------------------------------------------------------------
// Aliasing: arguments that are the SAME object in the test stay the same object in the worker.
//
// `relu(t, t)` calls relu with input and output bound to one tensor; sent as two values it would
// run on two tensors in the worker, and a ReLU that is wrong only in place would pass. So every
// request carries an alias map: alias[i] is the first parameter that is the same object as
// parameter i (i itself when there is none). Only the first parameter of each group travels; the
// worker binds every parameter of the group to that one value, and an output comes back once per
// group (from its first output parameter), copied into the one caller object.
//
// Two parameters may alias only when both are lvalue references to the same value type (a
// by-value parameter is a copy in the caller too). course::Tensor owns its storage (a
// std::vector), so two different Tensor objects never overlap: "same object" is exactly "same
// address". A future type with shared storage would have to add its own rule here.
// ---------------------------------------------------------------------------------------------

using AliasMap = std::vector<std::uint8_t>;

template <class Params>
struct AliasRules {
  static constexpr std::size_t count = std::tuple_size_v<Params>;
  static_assert(count < 256, "an alias map entry is one byte");

  template <std::size_t I, std::size_t J>
  static constexpr bool pair() {
    using A = std::tuple_element_t<I, Params>;
    using B = std::tuple_element_t<J, Params>;
    return std::is_lvalue_reference_v<A> && std::is_lvalue_reference_v<B> && std::is_same_v<value_t<A>, value_t<B>>;
  }
  template <std::size_t I, std::size_t... J>
  static constexpr std::array<bool, count> row(std::index_sequence<J...>) {
    return {pair<I, J>()...};
  }
  template <std::size_t... I>
  static constexpr std::array<std::array<bool, count>, count> table(std::index_sequence<I...>) {
    return {row<I>(std::make_index_sequence<count>{})...};
  }
  template <std::size_t... I>
  static constexpr std::array<bool, count> outputs(std::index_sequence<I...>) {
    return {is_output_v<std::tuple_element_t<I, Params>>...};
  }

  /// may_alias[i][j]: parameters i and j can be one object.
  static constexpr std::array<std::array<bool, count>, count> may_alias = table(std::make_index_sequence<count>{});
  /// output[i]: parameter i comes back after the call.
  static constexpr std::array<bool, count> output = outputs(std::make_index_sequence<count>{});

  /// A map the worker may accept: one entry per parameter, each pointing at or before itself to
  /// the first member of its group, between parameters that may alias.
  static bool valid(const AliasMap& alias) {
    if (alias.size() != count) return false;
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t j = alias[i];
      if (j > i || alias[j] != j) return false;
      if (j != i && !may_alias[i][j]) return false;
    }
    return true;
  }

  /// True when parameter i's value travels back: it is an output and the first output of its
  /// group (the others are the same object and would only repeat it).
  static bool writes_back(const AliasMap& alias, std::size_t i) {
    if (!output[i]) return false;
    for (std::size_t j = 0; j < i; ++j)
      if (alias[j] == alias[i] && output[j]) return false;
    return true;
  }
};

}  // namespace grader::rpc
