// The speed gate of lab 06: the student's whole pipeline on batches of 10,000 images against the
// reference solution's, in the same run, on the same GPU, timed by the test program on inputs
// made fresh for every round (grader/testkit/gpu_speed.hpp). A naive pipeline passes easily; what
// fails is waste around the kernels -- weights copied again on every call, a synchronisation
// after every launch, buffers allocated per call -- which the lecture warns about.
#include <doctest/doctest.h>

#include "gpu_speed.hpp"
#include "lab06_harness.hpp"
#include "lab06_test_support.hpp"

namespace lab06_tests {
namespace {

constexpr int kForwardsPerRound = 4;

TEST_CASE("speed: the whole pipeline on 10,000 images, at most 2x the reference's time") {
  const Model& model = fashion_model();
  grader::PipelineTimer timer;
  timer.prepare = [&] { lab06_harness::timing_prepare(model.folded, model.test.images, kForwardsPerRound); };
  timer.round = grader::round_through<lab06_harness::timing_round>;
  timer.forwards_per_round = kForwardsPerRound;
  timer.images_per_call = model.test.images.dim(0);
  grader::SpeedGate gate;
  gate.what = "NaiveLeNet::forward on 10,000 images";
  gate.requirement = course::speed::Requirement::within(1.0);  // at most 2x the reference's time
  // The least any correct call must do: 2 x 416,520 FLOPs per image; read the images once.
  gate.work = {2.0 * static_cast<double>(course::lenet::multiply_adds_per_image()) * 10000, 10000.0 * 784 * 4};
  grader::check_speed(gate, timer);
}

}  // namespace
}  // namespace lab06_tests
