// Lab 07 tests, part 3: bad arguments. The constructor and forward() must throw course::Error
// naming the problem BEFORE anything is launched (a kernel cannot throw, and a bad size becomes
// an out-of-bounds access). The harness builds the FastLeNet and calls forward() on scratch
// buffers, with one pointer replaced by nullptr where asked.
//
// Last of the correctness tests on purpose: a pipeline that does not validate may run its
// kernels out of bounds here, and such a fault can spoil the GPU context for tests after it.
#include <string>
#include <vector>

#include "lab07_test_support.hpp"

namespace lab07_tests {
namespace {

void check_forward_rejects(const std::string& what, const lab04::FoldedLeNet& net, int max_batch, int n,
                           const std::string& null_argument, const std::string& part) {
  grader::check_rejects(what, [&] { lab07_harness::call_lenet_with_arguments(net, max_batch, n, null_argument); },
                        part);
}

TEST_CASE("rejects: a valid call through the same path succeeds (so the rejections below mean something)") {
  const lab04::FoldedLeNet& good = mnist_model().folded;
  lab07_harness::call_lenet_with_arguments(good, 4, 4, "");
  lab07_harness::call_lenet_with_arguments(good, 4, 1, "");
}

TEST_CASE("rejects: forward() with a null pointer, n < 1 or n > max_batch") {
  const lab04::FoldedLeNet& good = mnist_model().folded;
  for (const char* p : {"d_images", "d_logits", "d_labels"})
    check_forward_rejects(std::string("forward with ") + p + " = nullptr", good, 4, 2, p, p);
  check_forward_rejects("forward with n = 0", good, 4, 0, "", "n");
  check_forward_rejects("forward with n = -3", good, 4, -3, "", "n");
  check_forward_rejects("forward with n = 5 > max_batch 4", good, 4, 5, "", "max_batch");
  check_forward_rejects("forward with n = 65 > max_batch 64", good, 64, 65, "", "max_batch");
}

TEST_CASE("rejects: the constructor with max_batch < 1") {
  const lab04::FoldedLeNet& good = mnist_model().folded;
  check_forward_rejects("FastLeNet(net, max_batch 0)", good, 0, 1, "", "max_batch");
  check_forward_rejects("FastLeNet(net, max_batch -1)", good, -1, 1, "", "max_batch");
}

TEST_CASE("rejects: the constructor with a weight or bias of the wrong shape, named") {
  const lab04::FoldedLeNet& good = mnist_model().folded;
  struct WrongShape {
    course::Tensor lab04::FoldedLeNet::*field;
    const char* name;
    course::Shape shape;
  };
  // Where possible the same number of elements in another shape (a transposed weight), so that a
  // check of the element count alone does not catch it.
  const std::vector<WrongShape> cases = {
      {&lab04::FoldedLeNet::conv1_weight, "conv1_weight", {1, 6, 5, 5}},
      {&lab04::FoldedLeNet::conv1_bias, "conv1_bias", {7}},
      {&lab04::FoldedLeNet::conv2_weight, "conv2_weight", {6, 16, 5, 5}},
      {&lab04::FoldedLeNet::conv2_bias, "conv2_bias", {6}},
      {&lab04::FoldedLeNet::fc1_weight, "fc1_weight", {400, 120}},
      {&lab04::FoldedLeNet::fc1_bias, "fc1_bias", {84}},
      {&lab04::FoldedLeNet::fc2_weight, "fc2_weight", {120, 84}},
      {&lab04::FoldedLeNet::fc2_bias, "fc2_bias", {120}},
      {&lab04::FoldedLeNet::fc3_weight, "fc3_weight", {84, 10}},
      {&lab04::FoldedLeNet::fc3_bias, "fc3_bias", {10, 1}},
  };
  for (const WrongShape& c : cases) {
    lab04::FoldedLeNet bad = good;
    bad.*c.field = course::Tensor(c.shape);
    check_forward_rejects(std::string("FastLeNet with ") + c.name + " " + course::shape_to_string(c.shape), bad, 4, 1,
                          "", c.name);
  }
}

}  // namespace
}  // namespace lab07_tests
