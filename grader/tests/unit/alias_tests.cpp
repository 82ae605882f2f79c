// The call channel keeps aliasing (grader/rpc/signature.hpp AliasRules, proxy.hpp alias_map,
// endpoints.hpp handle): an in-place call stays in place in the worker.
#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "course/tensor.hpp"
#include "rpc/endpoints.hpp"
#include "rpc/proxy.hpp"

namespace {

using grader::rpc::AliasMap;
using grader::rpc::Reader;
using grader::rpc::Writer;

void relu_like(const course::Tensor& input, course::Tensor& output);
float add(float a, float b) { return a + b; }
void two_outputs(course::Tensor& a, course::Tensor& b);
void mixed(const course::Tensor& t, const std::vector<float>& v, course::Tensor& out);

using ReluParams = grader::rpc::Signature<decltype(&relu_like)>::params;

template <class FnPtr, class... Args>
AliasMap map_of(Args&&... args) {
  return grader::rpc::detail::alias_map<typename grader::rpc::Signature<FnPtr>::params>(
      std::forward_as_tuple(args...), std::make_index_sequence<sizeof...(Args)>{});
}

// The worker side's view of one call: whether input and output were one object, and what the
// function saw in `input` after writing `output[0]` (an in-place ReLU that reads after writing).
bool g_same_object = false;
float g_input_after_write = 0;
void relu_like(const course::Tensor& input, course::Tensor& output) {
  g_same_object = &input == &output;
  output[0] = 42.0f;
  g_input_after_write = input[0];
  for (std::size_t i = 1; i < input.numel(); ++i) output[i] = input[i] > 0 ? input[i] : 0.0f;
}
void two_outputs(course::Tensor& a, course::Tensor& b) {
  a[0] += 1.0f;
  b[0] += 1.0f;  // the same object: +2 in all
}
void mixed(const course::Tensor&, const std::vector<float>&, course::Tensor&) {}

std::string request(const AliasMap& alias, const std::vector<course::Tensor>& values) {
  Writer w;
  grader::rpc::write(w, alias);
  for (const course::Tensor& t : values) grader::rpc::write(w, t);
  return w.buffer();
}

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("alias map: the same object twice is one group, different objects are not") {
  course::Tensor t(course::Shape{3}, 1.0f), u(course::Shape{3}, 1.0f);
  CHECK(map_of<decltype(&relu_like)>(t, t) == AliasMap{0, 0});
  CHECK(map_of<decltype(&relu_like)>(t, u) == AliasMap{0, 1});
  // Equal values are not the same object.
  course::Tensor copy = t;
  CHECK(map_of<decltype(&relu_like)>(t, copy) == AliasMap{0, 1});
  CHECK(map_of<decltype(&two_outputs)>(u, u) == AliasMap{0, 0});
}

TEST_CASE("alias map: by-value parameters and parameters of other types never alias") {
  float x = 1.0f;
  CHECK(map_of<decltype(&add)>(x, x) == AliasMap{0, 1});  // each by-value parameter is its own copy
  course::Tensor t(course::Shape{1}, 0.0f);
  std::vector<float> v{1.0f};
  CHECK(map_of<decltype(&mixed)>(t, v, t) == AliasMap{0, 1, 0});
  using Rules = grader::rpc::AliasRules<grader::rpc::Signature<decltype(&mixed)>::params>;
  CHECK_FALSE(Rules::may_alias[1][0]);  // a vector and a tensor
  CHECK(Rules::may_alias[2][0]);
}

TEST_CASE("alias map: the worker refuses maps that do not fit the function") {
  using Rules = grader::rpc::AliasRules<ReluParams>;
  CHECK(Rules::valid({0, 1}));
  CHECK(Rules::valid({0, 0}));
  CHECK_FALSE(Rules::valid({1, 1}));     // points forward
  CHECK_FALSE(Rules::valid({0}));        // too short
  CHECK_FALSE(Rules::valid({0, 1, 2}));  // too long
  CHECK_FALSE(Rules::valid({0, 7}));     // out of range
  using AddRules = grader::rpc::AliasRules<grader::rpc::Signature<decltype(&add)>::params>;
  CHECK_FALSE(AddRules::valid({0, 0}));  // by-value parameters cannot alias
  using MixedRules = grader::rpc::AliasRules<grader::rpc::Signature<decltype(&mixed)>::params>;
  CHECK_FALSE(MixedRules::valid({0, 0, 2}));  // a vector cannot be a tensor
  CHECK_FALSE(MixedRules::valid({0, 1, 1}));  // nor the other way
  CHECK(MixedRules::valid({0, 1, 0}));
  const std::string message = request({1, 1}, {course::Tensor(course::Shape{1}, 0.0f)});
  Reader in(message);
  Writer out;
  CHECK_THROWS_AS(grader::rpc::handle<&relu_like>(in, out), grader::rpc::ProtocolError);
}

TEST_CASE("endpoint: an aliased call binds both parameters to ONE object and returns it once") {
  const course::Tensor sent(course::Shape{3}, {-1.0f, -2.0f, 3.0f});
  const std::string message = request({0, 0}, {sent});
  Reader in(message);
  Writer out;
  grader::rpc::handle<&relu_like>(in, out);
  CHECK(g_same_object);
  CHECK(g_input_after_write == 42.0f);  // the input WAS the output
  Reader reply(out.buffer());
  CHECK(reply.scalar<grader::rpc::ReplyStatus>() == grader::rpc::ReplyStatus::ok);
  course::Tensor back;
  grader::rpc::read(reply, back);
  reply.expect_end();  // exactly one tensor came back
  CHECK(back.values() == std::vector<float>{42.0f, 0.0f, 3.0f});
}

TEST_CASE("endpoint: separate objects stay separate") {
  const std::string message = request({0, 1}, {course::Tensor(course::Shape{2}, {-1.0f, 5.0f}), course::Tensor(course::Shape{2}, 9.0f)});
  Reader in(message);
  Writer out;
  grader::rpc::handle<&relu_like>(in, out);
  CHECK_FALSE(g_same_object);
  CHECK(g_input_after_write == -1.0f);
  Reader reply(out.buffer());
  CHECK(reply.scalar<grader::rpc::ReplyStatus>() == grader::rpc::ReplyStatus::ok);
  course::Tensor back;
  grader::rpc::read(reply, back);
  reply.expect_end();
  CHECK(back.values() == std::vector<float>{42.0f, 5.0f});
}

TEST_CASE("endpoint: two aliased outputs are one object, written back once") {
  using Rules = grader::rpc::AliasRules<grader::rpc::Signature<decltype(&two_outputs)>::params>;
  CHECK(Rules::writes_back({0, 0}, 0));
  CHECK_FALSE(Rules::writes_back({0, 0}, 1));
  CHECK(Rules::writes_back({0, 1}, 1));
  const std::string message = request({0, 0}, {course::Tensor(course::Shape{1}, 0.0f)});
  Reader in(message);
  Writer out;
  grader::rpc::handle<&two_outputs>(in, out);
  Reader reply(out.buffer());
  CHECK(reply.scalar<grader::rpc::ReplyStatus>() == grader::rpc::ReplyStatus::ok);
  course::Tensor back;
  grader::rpc::read(reply, back);
  reply.expect_end();
  CHECK(back[0] == 2.0f);
}

}  // TEST_SUITE
