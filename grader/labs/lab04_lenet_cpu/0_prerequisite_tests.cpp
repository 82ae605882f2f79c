// Lab 04 runs first of all: the network is built from YOUR lab 02 convolution and lab 03 ReLU and
// max pooling. If one of them is missing or wrong, every network test below fails for a reason
// that has nothing to do with lab 04's own files; this test case names the real culprit.
#include <functional>
#include <string>

#include "lab02_reference.hpp"
#include "lab03_reference.hpp"
#include "lab04_test_support.hpp"
#include "labs/lab02_padding_stride.hpp"
#include "labs/lab03_pooling_activations.hpp"

using course::Shape;
using course::Tensor;

namespace {

// Runs `check` (returns "" when the function gave the right answer) and reports any failure or
// exception -- "not implemented" included -- as a failure of the earlier lab, by name and file.
void require_earlier_lab(const std::string& function, const std::string& file, const std::string& lab,
                         const std::function<std::string()>& check) {
  std::string problem;
  try {
    problem = check();
  } catch (const course::Error& e) {  // course::NotImplemented too
    problem = e.what();
  }
  CHECK_MESSAGE(problem.empty(), "lab04 uses your " << function << " (exercises/" << file << "), which fails: " << problem
                                                    << "; finish " << lab << " first");
}

}  // namespace

TEST_CASE("lab04 needs your lab02 and lab03") {
  course::Rng rng = grader::case_rng("lab04 prerequisites");
  // Small versions of the calls lenet_forward makes: conv1 (padding 2) and conv2 (no padding),
  // ReLU in place, 2x2 max pooling with stride 2.
  const Tensor x = rng.tensor({2, 1, 8, 8}), w1 = rng.tensor({3, 1, 5, 5}), b1 = rng.tensor({3});
  const Tensor h = rng.tensor({2, 3, 6, 6}), w2 = rng.tensor({4, 3, 5, 5}), b2 = rng.tensor({4});
  const course::Tolerance conv_tolerance{1e-4, 1e-4};

  require_earlier_lab("lab02::conv2d_forward", "lab02_padding_stride/conv2d_general.cpp", "lab02", [&] {
    const lab02::Conv2dParams padded = lab02::Conv2dParams::symmetric(2);
    Tensor out = grader::poisoned({2, 3, 8, 8});
    lab02::conv2d_forward(x, w1, b1, padded, out);
    std::string problem = grader::mismatch(out, golden::lab02_conv2d(x, w1, b1, padded), conv_tolerance);
    if (!problem.empty()) return "padding 2: " + problem;
    Tensor valid = grader::poisoned({2, 4, 2, 2});
    lab02::conv2d_forward(h, w2, b2, lab02::Conv2dParams{}, valid);
    problem = grader::mismatch(valid, golden::lab02_conv2d(h, w2, b2, lab02::Conv2dParams{}), conv_tolerance);
    return problem.empty() ? "" : "no padding: " + problem;
  });

  require_earlier_lab("lab03::relu", "lab03_pooling_activations/activations.cpp", "lab03", [&] {
    Tensor in_place = h;  // lab 04 calls relu(t, t)
    lab03::relu(in_place, in_place);
    return grader::mismatch(in_place, golden::relu(h), {0.0, 0.0});
  });

  require_earlier_lab("lab03::max_pool2d", "lab03_pooling_activations/pooling.cpp", "lab03", [&] {
    Tensor out = grader::poisoned({2, 3, 3, 3});
    lab03::max_pool2d(h, lab03::Pool2dParams::square(2, 2), out);
    return grader::mismatch(out, golden::max_pool2d(h, golden::Pool2d{}), {0.0, 0.0});
  });
}
