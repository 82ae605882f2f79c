// What both sides know about a lab function from its type alone: its result and which of its
// parameters are outputs. A non-const lvalue reference (course::Tensor& output) is sent to the
// worker and copied back after the call; everything else is input only.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>

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

}  // namespace grader::rpc
