// The worker side of a lab's calls: a table from function name to a handler that decodes the
// arguments, calls the student's function and encodes the results.
//
//   // grader/labs/lab01_conv2d/lab01_endpoints.cpp (linked into the worker only)
//   #include "rpc/endpoints.hpp"
//   #include "labs/lab01_conv2d.hpp"
//   COURSE_RPC_ENDPOINTS(
//       COURSE_RPC_ENDPOINT(lab01::conv2d_output_shape),
//       COURSE_RPC_ENDPOINT(lab01::conv2d_forward))
//
// Several endpoint files may be linked into one worker (a lab that USES an earlier lab gets the
// earlier lab's endpoints too): each registers its table when the worker starts.
#pragma once

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "frames.hpp"
#include "codec.hpp"
#include "signature.hpp"

namespace grader::rpc {

using Handler = void (*)(Reader& in, Writer& out);

struct Endpoint {
  std::string name;
  Handler handler;
};

/// Every endpoint linked into this worker.
std::vector<Endpoint>& endpoint_registry();

struct EndpointRegistrar {
  explicit EndpointRegistrar(std::initializer_list<Endpoint> endpoints) {
    for (const Endpoint& e : endpoints) endpoint_registry().push_back(e);
  }
};

/// "lab01 :: conv2d_forward" and "lab01::conv2d_forward" name the same function.
std::string canonical_name(const std::string& name);

namespace detail {

template <auto Fn, std::size_t... I>
void handle(Reader& in, Writer& out, std::index_sequence<I...>) {
  using S = Signature<decltype(Fn)>;
  (check_parameter<std::tuple_element_t<I, typename S::params>>(), ...);
  std::tuple<value_t<std::tuple_element_t<I, typename S::params>>...> args;
  (rpc::read(in, std::get<I>(args)), ...);
  in.expect_end();
  if constexpr (std::is_void_v<typename S::result>) {
    std::apply(Fn, args);
    out.scalar(ReplyStatus::ok);
  } else {
    const value_t<typename S::result> result = std::apply(Fn, args);
    out.scalar(ReplyStatus::ok);
    rpc::write(out, result);
  }
  // Outputs come back in parameter order.
  ((is_output_v<std::tuple_element_t<I, typename S::params>> ? rpc::write(out, std::get<I>(args)) : void()), ...);
}

}  // namespace detail

template <auto Fn>
void handle(Reader& in, Writer& out) {
  detail::handle<Fn>(in, out, std::make_index_sequence<Signature<decltype(Fn)>::arity>{});
}

}  // namespace grader::rpc

#define COURSE_RPC_ENDPOINT(fn) ::grader::rpc::Endpoint{#fn, &::grader::rpc::handle<&fn>}
#define COURSE_RPC_CONCAT_INNER(a, b) a##b
#define COURSE_RPC_CONCAT(a, b) COURSE_RPC_CONCAT_INNER(a, b)
#define COURSE_RPC_ENDPOINTS(...)                                                                  \
  namespace {                                                                                      \
  const ::grader::rpc::EndpointRegistrar COURSE_RPC_CONCAT(course_rpc_endpoints_, __LINE__){__VA_ARGS__}; \
  }
