// The test program's side of a lab's calls. The tests call the lab's functions as declared in
// the interface header; in the test program each of those functions is a proxy that sends its
// arguments to the worker process (where the student's code runs), waits for the reply and
// copies the outputs back:
//
//   // grader/labs/lab01_conv2d/lab01_proxies.cpp (linked into the test program only)
//   #include "rpc/proxy.hpp"
//   #include "labs/lab01_conv2d.hpp"
//   namespace lab01 {
//   void conv2d_forward(const course::Tensor& input, const course::Tensor& weight,
//                       const course::Tensor& bias, course::Tensor& output) {
//     COURSE_RPC_FORWARD(lab01::conv2d_forward, input, weight, bias, output);
//   }
//   }  // namespace lab01
//
// What the worker throws comes back: course::NotImplemented and course::Error keep their type
// and message, any other exception becomes std::runtime_error("<type>: <message>"). A worker that
// crashes, hangs or answers nonsense becomes a WorkerFailure naming the function.
#pragma once

#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "codec.hpp"
#include "frames.hpp"
#include "signature.hpp"

namespace grader::rpc {

/// The worker crashed, timed out, was killed or broke the protocol during a call. Deliberately
/// not a course::Error: a crash must never count as the clean rejection of a bad argument.
class WorkerFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Sends one request to this process's worker (starting it on first use) and returns the reply
/// after its status byte; throws the worker's exception or a WorkerFailure.
std::string call_worker(const std::string& function, const std::string& request);

namespace detail {

template <class T>
void read_output(Reader& in, T& target) {
  if constexpr (!std::is_const_v<T>) rpc::read(in, target);
}

/// The alias map of one call: parameter i aliases the first earlier parameter that is the same
/// object (same address, same type, both references: AliasRules). An argument of another type
/// than its parameter is converted into a temporary and never aliases.
template <class Params, class Refs, std::size_t... I>
AliasMap alias_map(const Refs& refs, std::index_sequence<I...>) {
  using Rules = AliasRules<Params>;
  const void* address[] = {nullptr, static_cast<const void*>(&std::get<I>(refs))...};
  constexpr bool exact[] = {false, std::is_same_v<std::remove_cv_t<std::remove_reference_t<std::tuple_element_t<I, Refs>>>,
                                                  value_t<std::tuple_element_t<I, Params>>>...};
  AliasMap alias(Rules::count);
  for (std::size_t i = 0; i < Rules::count; ++i) {
    alias[i] = static_cast<std::uint8_t>(i);
    for (std::size_t j = 0; j < i; ++j)
      if (Rules::may_alias[i][j] && exact[i + 1] && exact[j + 1] && address[i + 1] == address[j + 1]) {
        alias[i] = alias[j];
        break;
      }
  }
  return alias;
}

template <class FnPtr, class Refs, std::size_t... I>
typename Signature<FnPtr>::result forward(const char* name, Refs refs, std::index_sequence<I...> seq) {
  using S = Signature<FnPtr>;
  using R = typename S::result;
  using Rules = AliasRules<typename S::params>;
  (check_parameter<std::tuple_element_t<I, typename S::params>>(), ...);
  const AliasMap alias = alias_map<typename S::params>(refs, seq);
  Writer request;
  rpc::write(request, std::string(name));
  rpc::write(request, alias);
  // Each argument travels as the parameter's own type (so an int literal passed to a double
  // parameter is sent as a double, exactly as the worker will read it); an argument that is the
  // same object as an earlier one does not travel again.
  ((alias[I] == I ? rpc::write(request, static_cast<const value_t<std::tuple_element_t<I, typename S::params>>&>(std::get<I>(refs)))
                  : void()),
   ...);
  const std::string reply = call_worker(name, request.buffer());
  Reader in(reply);
  try {
    // Outputs come back once per object, in parameter order (AliasRules::writes_back).
    if constexpr (std::is_void_v<R>) {
      ((Rules::writes_back(alias, I) ? read_output(in, std::get<I>(refs)) : void()), ...);
      in.expect_end();
    } else {
      value_t<R> result{};
      rpc::read(in, result);
      ((Rules::writes_back(alias, I) ? read_output(in, std::get<I>(refs)) : void()), ...);
      in.expect_end();
      return result;
    }
  } catch (const ProtocolError& e) {
    throw WorkerFailure(std::string(name) + ": the worker's reply is malformed (" + e.what() + ")");
  }
}

}  // namespace detail

template <class FnPtr, class... Args>
typename Signature<FnPtr>::result forward(const char* name, Args&&... args) {
  static_assert(sizeof...(Args) == Signature<FnPtr>::arity, "argument count differs from the function's");
  return detail::forward<FnPtr>(name, std::forward_as_tuple(args...), std::make_index_sequence<sizeof...(Args)>{});
}

}  // namespace grader::rpc

#define COURSE_RPC_FORWARD(fn, ...) ::grader::rpc::forward<decltype(&fn)>(#fn, __VA_ARGS__)
