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
  using Rules = AliasRules<typename S::params>;
  (check_parameter<std::tuple_element_t<I, typename S::params>>(), ...);
  AliasMap alias;
  rpc::read(in, alias);
  if (!Rules::valid(alias)) throw ProtocolError("the request's alias map does not fit the function's parameters");
  // Only the first parameter of each alias group travels; every parameter of the group is then
  // bound to that one value, so an in-place call stays in place in the worker.
  std::tuple<value_t<std::tuple_element_t<I, typename S::params>>...> args;
  ((alias[I] == I ? rpc::read(in, std::get<I>(args)) : void()), ...);
  in.expect_end();
  void* const base[] = {nullptr, static_cast<void*>(&std::get<I>(args))...};
  void* const bound[] = {nullptr, base[alias[I] + 1]...};
  // AliasRules::valid guarantees that bound[I + 1] points at a value of parameter I's type.
  auto call = [&] { return Fn(*static_cast<value_t<std::tuple_element_t<I, typename S::params>>*>(bound[I + 1])...); };
  if constexpr (std::is_void_v<typename S::result>) {
    call();
    out.scalar(ReplyStatus::ok);
  } else {
    const value_t<typename S::result> result = call();
    out.scalar(ReplyStatus::ok);
    rpc::write(out, result);
  }
  // Outputs come back in parameter order, once per object.
  ((Rules::writes_back(alias, I)
        ? rpc::write(out, *static_cast<const value_t<std::tuple_element_t<I, typename S::params>>*>(bound[I + 1]))
        : void()),
   ...);
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
