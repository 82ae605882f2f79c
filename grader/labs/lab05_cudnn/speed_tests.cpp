// The speed gate of lab 05: the student's CudnnLeNet on 10,000 Fashion-MNIST images against the
// reference solution's, in the same run, on the same GPU (grader/testkit/gpu_speed.hpp). Both call
// the same libraries, so the student must be within 1.3x: what fails is an algorithm searched for
// again on every call instead of cached, or a workspace allocated on every call.
#include <doctest/doctest.h>

#include "gpu_speed.hpp"
#include "lab05_harness.hpp"
#include "lab05_test_support.hpp"

TEST_CASE("speed: CudnnLeNet on 10,000 images, at most 1.3x the reference's time") {
  const lab05_tests::Model& model = lab05_tests::fashion_model();
  constexpr int kSets = 3;
  std::vector<course::Tensor> sets;
  for (int i = 0; i < kSets; ++i) sets.push_back(grader::rotated_images(model.test.images, 1000 * i));
  std::vector<int> golden;
  for (const auto& top : lab05_tests::row_tops(model.golden_logits)) golden.push_back(top.label);

  grader::PipelineTimer timer;
  timer.prepare = [&] { lab05_harness::timing_prepare(model.folded, sets); };
  timer.run = [](int set) { return lab05_harness::timing_run(set); };
  timer.recheck = [&](int set) {
    course::Tensor logits;
    std::vector<int> labels;
    lab05_harness::timing_result(logits, labels);
    const std::vector<int> expected = grader::rotated_labels(golden, 1000 * set);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) differ += labels[i] != expected[i] ? 1 : 0;
    if (differ > 0)
      throw course::Error("after timing, " + std::to_string(differ) + " of 10,000 labels differ from the golden LeNet");
  };
  grader::SpeedGate gate;
  gate.what = "CudnnLeNet::forward on 10,000 images";
  gate.requirement = course::speed::Requirement::within(0.30);
  gate.input_sets = kSets;
  gate.work = {2.0 * static_cast<double>(course::lenet::multiply_adds_per_image()) * 10000, 10000.0 * 784 * 4};
  gate.schedule.min_rounds = 9;
  gate.schedule.time_budget_s = 6;
  grader::check_speed(gate, timer);
}
