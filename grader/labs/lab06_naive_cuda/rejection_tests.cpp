// Lab 06 tests, part 4: bad arguments. Every launcher must throw course::Error naming the
// argument BEFORE it launches anything (a kernel cannot throw, and a bad size becomes an
// out-of-bounds access). The harness calls the student's functions with these raw sizes on
// scratch buffers of 65,536 elements, or with one pointer replaced by nullptr.
//
// Last in file order on purpose: a launcher that does not validate may run its kernel out of
// bounds here, and such a fault can spoil the GPU context for the tests that would follow.
#include <string>
#include <vector>

#include "lab06_test_support.hpp"

namespace {

void check_call_rejects(const std::string& function, const std::vector<int>& sizes, const std::string& part,
                        const std::string& null_argument = "") {
  std::string described = function + "(";
  for (std::size_t i = 0; i < sizes.size(); ++i) described += (i ? ", " : "") + std::to_string(sizes[i]);
  described += null_argument.empty() ? ")" : ") with " + null_argument + " = nullptr";
  grader::check_rejects(described, [&] { lab06_harness::call_with_arguments(function, sizes, null_argument); }, part);
}

}  // namespace

TEST_CASE("rejects: a valid call through the same path succeeds (so the rejections below mean something)") {
  lab06_harness::call_with_arguments("conv2d_forward", {1, 2, 8, 8, 3, 3, 3, 1}, "");
  lab06_harness::call_with_arguments("relu_inplace", {1000}, "");
  lab06_harness::call_with_arguments("max_pool2d", {1, 2, 8, 8, 2, 2}, "");
  lab06_harness::call_with_arguments("linear_forward", {4, 30, 20}, "");
  lab06_harness::call_with_arguments("argmax_rows", {4, 10}, "");
}

TEST_CASE("rejects: conv2d_forward -- null pointers, sizes < 1, negative padding, kernel too large") {
  const std::vector<int> ok{1, 2, 8, 8, 3, 3, 3, 1};
  for (const char* p : {"d_input", "d_weight", "d_bias", "d_output"}) check_call_rejects("conv2d_forward", ok, p, p);
  const char* names[] = {"N", "C", "H", "W", "K", "R", "S"};
  for (std::size_t i = 0; i < 7; ++i) {
    std::vector<int> bad = ok;
    bad[i] = i % 2 == 0 ? 0 : -1;
    check_call_rejects("conv2d_forward", bad, names[i]);
  }
  check_call_rejects("conv2d_forward", {1, 2, 8, 8, 3, 3, 3, -1}, "pad");
  check_call_rejects("conv2d_forward", {1, 2, 4, 8, 3, 7, 3, 1}, "kernel larger");  // R = 7 > 4 + 2
  check_call_rejects("conv2d_forward", {1, 2, 8, 4, 3, 3, 7, 1}, "kernel larger");  // S = 7 > 4 + 2
}

TEST_CASE("rejects: relu_inplace, max_pool2d, linear_forward, argmax_rows") {
  check_call_rejects("relu_inplace", {10}, "d_data", "d_data");
  check_call_rejects("relu_inplace", {0}, "count");
  check_call_rejects("relu_inplace", {-5}, "count");

  const std::vector<int> pool{1, 2, 8, 8, 2, 2};
  check_call_rejects("max_pool2d", pool, "d_input", "d_input");
  check_call_rejects("max_pool2d", pool, "d_output", "d_output");
  const char* pool_names[] = {"N", "C", "H", "W", "window", "stride"};
  for (std::size_t i = 0; i < 6; ++i) {
    std::vector<int> bad = pool;
    bad[i] = 0;
    check_call_rejects("max_pool2d", bad, pool_names[i]);
  }
  check_call_rejects("max_pool2d", {1, 2, 8, 3, 4, 2}, "window larger");

  const std::vector<int> linear{4, 30, 20};
  for (const char* p : {"d_input", "d_weight", "d_bias", "d_output"}) check_call_rejects("linear_forward", linear, p, p);
  check_call_rejects("linear_forward", {0, 30, 20}, "N");
  check_call_rejects("linear_forward", {4, 0, 20}, "in_features");
  check_call_rejects("linear_forward", {4, 30, -1}, "out_features");

  check_call_rejects("argmax_rows", {4, 10}, "d_logits", "d_logits");
  check_call_rejects("argmax_rows", {4, 10}, "d_labels", "d_labels");
  check_call_rejects("argmax_rows", {0, 10}, "N");
  check_call_rejects("argmax_rows", {4, 0}, "classes");
}

TEST_CASE("rejects: NaiveLeNet -- wrong weight shapes, max_batch, n, null pointers") {
  const lab04::FoldedLeNet good = lab06_tests::mnist_model().folded;
  grader::check_rejects("NaiveLeNet(net, max_batch 0)", [&] { lab06_harness::call_lenet_with_arguments(good, 0, 1, ""); },
                        "max_batch");
  {
    lab04::FoldedLeNet bad = good;
    bad.fc1_weight = good.fc1_weight.reshaped({400, 120});  // transposed shape, same element count
    grader::check_rejects("NaiveLeNet with fc1_weight [400, 120]",
                          [&] { lab06_harness::call_lenet_with_arguments(bad, 4, 1, ""); }, "fc1_weight");
  }
  {
    lab04::FoldedLeNet bad = good;
    bad.conv2_bias = course::Tensor(course::Shape{6});
    grader::check_rejects("NaiveLeNet with conv2_bias [6]", [&] { lab06_harness::call_lenet_with_arguments(bad, 4, 1, ""); },
                          "conv2_bias");
  }
  {
    lab04::FoldedLeNet bad = good;
    bad.conv1_weight = course::Tensor(course::Shape{6, 1, 3, 3});
    grader::check_rejects("NaiveLeNet with conv1_weight [6, 1, 3, 3]",
                          [&] { lab06_harness::call_lenet_with_arguments(bad, 4, 1, ""); }, "conv1_weight");
  }
  grader::check_rejects("forward with n = 0", [&] { lab06_harness::call_lenet_with_arguments(good, 4, 0, ""); }, "n");
  grader::check_rejects("forward with n = 5 > max_batch 4",
                        [&] { lab06_harness::call_lenet_with_arguments(good, 4, 5, ""); }, "max_batch");
  for (const char* p : {"d_images", "d_logits", "d_labels"})
    grader::check_rejects(std::string("forward with ") + p + " = nullptr",
                          [&] { lab06_harness::call_lenet_with_arguments(good, 4, 2, p); }, p);
}

TEST_CASE("rejects: tensors too large for int indexing (checked in 64 bits, before any launch)") {
  // 65,536 x 65,536 = 2^32 input elements: an int index would overflow.
  check_call_rejects("conv2d_forward", {1, 1, 65536, 65536, 1, 1, 1, 0}, "too large");
  // A small input, but 2^31 outputs: 8 x 4096 x 256 x 256.
  check_call_rejects("conv2d_forward", {8, 1, 256, 256, 4096, 1, 1, 0}, "too large");
  check_call_rejects("max_pool2d", {1, 1, 65536, 65536, 2, 2}, "too large");
  check_call_rejects("linear_forward", {65536, 65536, 1}, "too large");
  check_call_rejects("argmax_rows", {65536, 65536}, "too large");
}
