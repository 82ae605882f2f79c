// The speed gate of lab 05: the student's CudnnLeNet on batches of 10,000 images against the
// reference solution's, in the same run, on the same GPU, timed by the test program on inputs
// made fresh for every round (grader/testkit/gpu_speed.hpp). Both call the same libraries, so the
// student must be within 1.3x: what fails is an algorithm searched for again on every call
// instead of cached, or a workspace allocated on every call.
#include <doctest/doctest.h>

#include "gpu_speed.hpp"
#include "lab05_harness.hpp"
#include "lab05_test_support.hpp"

TEST_CASE("speed: CudnnLeNet on 10,000 images, at most 1.3x the reference's time") {
  constexpr int kForwardsPerRound = 4;
  const lab05_tests::Model& model = lab05_tests::fashion_model();
  grader::PipelineTimer timer;
  timer.prepare = [&] { lab05_harness::timing_prepare(model.folded, model.test.images, kForwardsPerRound); };
  timer.round = grader::round_through<lab05_harness::timing_round>;
  timer.forwards_per_round = kForwardsPerRound;
  timer.images_per_call = model.test.images.dim(0);
  timer.returns_labels = false;  // CudnnLeNet::forward returns logits only
  grader::SpeedGate gate;
  gate.what = "CudnnLeNet::forward on 10,000 images";
  gate.requirement = course::speed::Requirement::within(0.30);
  gate.work = {2.0 * static_cast<double>(course::lenet::multiply_adds_per_image()) * 10000, 10000.0 * 784 * 4};
  grader::check_speed(gate, timer);
}
