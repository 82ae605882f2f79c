// The speed gate of lab 06: the student's whole pipeline on 10,000 Fashion-MNIST images against
// the reference solution's, in the same run, on the same GPU (grader/testkit/gpu_speed.hpp).
// A naive pipeline passes easily; what fails is waste around the kernels -- weights copied again
// on every call, a synchronisation after every launch, buffers allocated per call -- which the
// lecture warns about.
#include <doctest/doctest.h>

#include "gpu_speed.hpp"
#include "lab06_harness.hpp"
#include "lab06_test_support.hpp"
#include "lenet_reference.hpp"

namespace lab06_tests {
namespace {

TEST_CASE("speed: the whole pipeline on 10,000 images, at most 2x the reference's time") {
  const Model& model = fashion_model();
  constexpr int kSets = 3;
  std::vector<course::Tensor> sets;
  for (int i = 0; i < kSets; ++i) sets.push_back(grader::rotated_images(model.test.images, 1000 * i));
  const std::vector<int> golden = row_argmax(golden::lenet_forward(model.weights, model.test.images));

  grader::PipelineTimer timer;
  timer.prepare = [&] { lab06_harness::timing_prepare(model.folded, sets); };
  timer.run = [](int set) { return lab06_harness::timing_run(set); };
  timer.recheck = [&](int set) {
    course::Tensor logits;
    std::vector<int> labels;
    lab06_harness::timing_result(logits, labels);
    const std::vector<int> expected = grader::rotated_labels(golden, 1000 * set);
    if (!check_labels("labels of the last timed run (input set " + std::to_string(set) + ")", labels, expected))
      throw course::Error("the outputs after timing are wrong");
  };
  grader::SpeedGate gate;
  gate.what = "NaiveLeNet::forward on 10,000 images";
  gate.requirement = course::speed::Requirement::within(1.0);  // at most 2x the reference's time
  gate.input_sets = kSets;
  // The least any correct run must do: 2 x 416,520 FLOPs per image; read the images once.
  gate.work = {2.0 * static_cast<double>(course::lenet::multiply_adds_per_image()) * 10000, 10000.0 * 784 * 4};
  gate.schedule.min_rounds = 9;
  gate.schedule.time_budget_s = 6;
  grader::check_speed(gate, timer);
}

}  // namespace
}  // namespace lab06_tests
