#include "gpu_speed.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

#include "course/device.hpp"
#include "course/error.hpp"
#include "course/speed/statistics.hpp"
#include "rpc/client.hpp"

namespace grader {
namespace {

using Clock = std::chrono::steady_clock;
using course::speed::format_ms;

std::uint64_t fresh_nonce() {
  static std::random_device device;
  return (std::uint64_t{device()} << 32) ^ device();
}

/// What one block measured: the trusted time of each timed round (and of each null round), and,
/// where asked for, every round's outputs.
struct Block {
  std::vector<double> round_ms;
  std::vector<double> null_ms;
  std::vector<double> event_ms;  ///< the worker's own per-call event times (information)
  std::vector<RoundOutputs> outputs;
};

/// One round timed on this process's clock: from the request sent until this side holds its own
/// copy of every output (logits, then labels, at the start of the region shared with the worker).
RoundOutputs timed_round(const PipelineTimer& timer, std::uint64_t nonce, bool run, double& ms) {
  const std::int64_t rows = timer.forwards_per_round * timer.images_per_call;
  RoundOutputs out;
  out.logits = course::Tensor(course::Shape{rows, timer.classes});
  out.labels.assign(static_cast<std::size_t>(rows), -1);
  std::vector<unsigned char> copy(out.logits.bytes() + out.labels.size() * sizeof(int));
  const auto start = Clock::now();
  out.event_ms = timer.round(nonce, run);
  rpc::read_shared_region(copy.data(), copy.size());
  ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  std::memcpy(out.logits.data(), copy.data(), out.logits.bytes());
  std::memcpy(out.labels.data(), copy.data() + out.logits.bytes(), out.labels.size() * sizeof(int));
  return out;
}

enum class Side { reference, student };

/// COURSE_SPEED_TRACE=<file>: one line per block appended to that file -- where a gate's time goes
/// besides its rounds (the grader's timed phase, README "The order of the runs"). Information only.
void trace_block(const SpeedGate& gate, Side side, const std::vector<Clock::time_point>& marks) {
  const char* path = std::getenv("COURSE_SPEED_TRACE");
  if (path == nullptr || *path == '\0' || marks.size() != 5) return;
  const auto s = [&](std::size_t k) { return std::chrono::duration<double>(marks[k + 1] - marks[k]).count(); };
  if (std::FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s | %s | stop %.3f s, start + prepare %.3f s, warm-up %.3f s, rounds %.3f s\n", gate.what.c_str(),
                 side == Side::reference ? "reference" : "student", s(0), s(1), s(2), s(3));
    std::fclose(f);
  }
}

/// A block of rounds of one side in a fresh worker, every other worker stopped before it starts
/// and this one stopped after it ends (their PID namespaces die with them, so nothing of the other
/// side holds the GPU meanwhile). Every block has the same rhythm -- a timed round, a null round,
/// nothing else in between -- so that both sides meet the GPU in the same state. With `check`,
/// after the block, every round's outputs are compared with the reference block's round of the
/// same nonce; the first difference goes to `failure`.
Block run_block(const PipelineTimer& timer, const SpeedGate& gate, Side side, const std::vector<std::uint64_t>& nonces,
                bool keep_outputs, const Block* check, std::string& failure) {
  std::vector<Clock::time_point> marks = {Clock::now()};
  rpc::stop_workers();
  marks.push_back(Clock::now());
  std::optional<rpc::ReferenceWorkerScope> reference;
  if (side == Side::reference) reference.emplace();
  if (side == Side::reference && timer.reference_prepare)
    timer.reference_prepare();
  else
    timer.prepare();
  marks.push_back(Clock::now());
  double ms = 0;
  for (int w = 0; w < gate.warmup_rounds; ++w) timed_round(timer, fresh_nonce(), true, ms);
  marks.push_back(Clock::now());
  Block block;
  const auto images = static_cast<int>(timer.images_per_call);
  for (std::size_t k = 0; k < nonces.size(); ++k) {
    RoundOutputs out = timed_round(timer, nonces[k], true, ms);
    block.round_ms.push_back(ms);
    if (!out.event_ms.empty()) block.event_ms.push_back(course::speed::median(out.event_ms));
    if (keep_outputs || check != nullptr) block.outputs.push_back(std::move(out));
    timed_round(timer, fresh_nonce(), false, ms);
    block.null_ms.push_back(ms);
  }
  marks.push_back(Clock::now());
  trace_block(gate, side, marks);
  rpc::stop_workers();
  for (std::size_t k = 0; check != nullptr && k < block.outputs.size(); ++k) {
    failure = compare_round(block.outputs[k], check->outputs[k], images, timer.logit_tolerance, timer.returns_labels);
    if (!failure.empty()) {
      failure = "timed round " + std::to_string(k + 1) + " of " + std::to_string(nonces.size()) + ", " + failure;
      break;
    }
  }
  if (!keep_outputs) block.outputs.clear();
  return block;
}

std::string percent(double fraction) {
  std::ostringstream out;
  out.precision(1);
  out << std::fixed << 100 * fraction << "%";
  return out.str();
}

/// The official-grading rule when no reference worker exists; true when the gate may go on.
bool reference_present(const SpeedGate& gate) {
  std::string why;
  if (rpc::reference_worker_available(&why)) return true;
  // Official grading (the instructor's hidden cases are in use) never lets a speed requirement
  // go unjudged: a student handout without the reference would otherwise pass any pipeline.
  const char* hidden = std::getenv("COURSE_HIDDEN_DIR");
  const bool official = hidden != nullptr && *hidden != '\0';
  if (official && gate.requirement.min_speedup > 0)
    FAIL_CHECK(gate.what << ": speed cannot be judged: " << why
                         << " (official grading needs the reference solution's worker: grade in a build "
                            "with the solutions, or set COURSE_REFERENCE_WORKER_DIR)");
  else
    MESSAGE("course-note speed not judged: " << why << " (grade in a build with the solutions, or set "
                                                         "COURSE_REFERENCE_WORKER_DIR to the reference workers)");
  return false;
}

}  // namespace

std::string compare_round(const RoundOutputs& student, const RoundOutputs& reference, int images_per_call,
                          double tolerance, bool labels) {
  if (student.logits.shape() != reference.logits.shape())
    return "the logits came back as " + course::shape_to_string(student.logits.shape()) + ", not " +
           course::shape_to_string(reference.logits.shape());
  if (reference.logits.rank() != 2) return "the reference's logits are not a matrix";
  const auto rows = static_cast<std::size_t>(reference.logits.dim(0));
  const auto classes = static_cast<std::size_t>(reference.logits.dim(1));
  const auto per_call = static_cast<std::size_t>(std::max(images_per_call, 1));
  const auto where = [&](std::size_t row) {
    return "call " + std::to_string(row / per_call + 1) + ", image " + std::to_string(row % per_call);
  };
  for (std::size_t i = 0; i < rows; ++i) {
    const float* s = student.logits.data() + i * classes;
    const float* r = reference.logits.data() + i * classes;
    for (std::size_t j = 0; j < classes; ++j) {
      if (!std::isfinite(s[j]) || !(std::fabs(s[j] - r[j]) <= tolerance)) {
        std::ostringstream out;
        out << where(i) << ", logit " << j << ": " << s[j] << " where the reference solution gives " << r[j]
            << " for the same inputs (tolerance " << tolerance << ")"
            << (std::isnan(s[j]) ? " -- NaN is what the harness poisons outputs with: never written?" : "");
        return out.str();
      }
    }
    if (!labels) continue;
    if (student.labels.size() != rows) return "the labels came back as " + std::to_string(student.labels.size()) + " values, not " + std::to_string(rows);
    std::vector<float> row(r, r + classes);
    const auto top = static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin());
    std::nth_element(row.begin(), row.begin() + 1, row.end(), std::greater<float>());
    const bool clear = row[0] - row[1] > 2 * tolerance;  // a near-tie may go either way
    if (clear && student.labels[i] != top)
      return where(i) + ": label " + std::to_string(student.labels[i]) + " where the logits' maximum is class " +
             std::to_string(top);
  }
  return "";
}

void check_speed(const SpeedGate& gate, const PipelineTimer& timer) {
  // The grader sets COURSE_GPU_SHARED=1 for the test programs it runs while other labs' run on
  // the GPU too; a gate there would time them as well. It runs a lab's TIMED_TESTS alone: a gate
  // outside that filter is a mistake of the lab's CMakeLists.txt, and must not pass unnoticed.
  if (const char* shared = std::getenv("COURSE_GPU_SHARED"); shared != nullptr && std::string(shared) == "1") {
    FAIL_CHECK(gate.what << ": a speed gate ran while the grader shares the GPU between test programs "
                            "(COURSE_GPU_SHARED=1); its test case must match the lab's TIMED_TESTS filter "
                            "(course_add_lab) so that it runs alone");
    return;
  }
  if (!reference_present(gate)) return;
  const int R = timer.forwards_per_round;
  Block ref1, student, ref2;
  double drift = 0;
  for (int attempt = 1;; ++attempt) {
    std::vector<std::uint64_t> nonces(static_cast<std::size_t>(gate.rounds)), fresh(nonces.size());
    for (std::size_t k = 0; k < nonces.size(); ++k) nonces[k] = fresh_nonce(), fresh[k] = fresh_nonce();
    std::string failure;
    ref1 = run_block(timer, gate, Side::reference, nonces, true, nullptr, failure);
    student = run_block(timer, gate, Side::student, nonces, false, &ref1, failure);
    if (!failure.empty()) {
      FAIL_CHECK(gate.what << ": the outputs of a timed round differ from the reference solution's -- " << failure
                           << ". Every output of every timed round is checked, on inputs made fresh for that round.");
      return;
    }
    ref2 = run_block(timer, gate, Side::reference, fresh, false, nullptr, failure);
    drift = course::speed::median(ref2.round_ms) / course::speed::median(ref1.round_ms) - 1;
    if (std::fabs(drift) <= gate.max_calibration_drift) break;
    const std::string what = gate.what + ": the reference solution's rounds took " + percent(std::fabs(drift)) +
                             (drift > 0 ? " longer" : " less") +
                             " after the student's block than in its calibration before it: the GPU was not ours "
                             "alone (another process on it?)";
    if (attempt >= gate.attempts) {
      FAIL_CHECK(what << "; the speed cannot be judged on this run (tried " << attempt
                      << " times). Grade again on an idle GPU.");
      return;
    }
    MESSAGE(what << "; timing again");
  }

  // The fixed cost of a round comes off each side's rounds; what is left, over R, is the time of
  // one pipeline call. The reference's is its own null rounds' median. The student's is the
  // smaller of that and the student's own (the two workers' fixed costs differ a little, e.g. a
  // CPU that slept through a long reference round): a student who inflated their own null rounds
  // gets the reference's, and a smaller fixed cost only makes the student's time per call longer.
  std::vector<double> nulls = ref1.null_ms;
  nulls.insert(nulls.end(), ref2.null_ms.begin(), ref2.null_ms.end());
  const double fixed = course::speed::median(nulls);
  const double student_fixed = std::min(fixed, course::speed::median(student.null_ms));
  std::vector<double> reference_ms, candidate_ms;
  for (std::size_t k = 0; k < student.round_ms.size(); ++k) {
    const double ref = ((ref1.round_ms[k] + ref2.round_ms[k]) / 2 - fixed) / R;
    if (!(ref > 0)) {
      FAIL_CHECK(gate.what << ": the reference's round (" << format_ms(ref1.round_ms[k]) << ") is not longer than a round's "
                           << "fixed cost (" << format_ms(fixed) << "): the gate cannot measure this pipeline");
      return;
    }
    reference_ms.push_back(ref);
    // A round quicker than its fixed cost is impossible for honest work; keep it tiny but positive
    // so that the plausibility bound below names it.
    candidate_ms.push_back(std::max((student.round_ms[k] - student_fixed) / R, 1e-6));
  }

  course::speed::SpeedResult result;
  result.reference_ms = reference_ms;
  result.candidate_ms = candidate_ms;
  result.reference = course::speed::median_ci(reference_ms);
  result.candidate = course::speed::median_ci(candidate_ms);
  result.speedup = course::speed::speedup_ci(reference_ms, candidate_ms);
  result.rounds = static_cast<int>(candidate_ms.size());
  result.warmup_rounds = gate.warmup_rounds;
  result.requirement = gate.requirement;
  result.decision = course::speed::decide(result.speedup, gate.requirement);
  MESSAGE(gate.what << ": " << result.summary());
  MESSAGE(gate.what << ": timed here, per round of " << R << " calls: reference " << format_ms(course::speed::median(ref1.round_ms))
                    << " then " << format_ms(course::speed::median(ref2.round_ms)) << " (calibration "
                    << (drift >= 0 ? "+" : "-") << percent(std::fabs(drift)) << "), student "
                    << format_ms(course::speed::median(student.round_ms)) << "; fixed cost: reference " << format_ms(fixed)
                    << ", student " << format_ms(student_fixed) << " (their own null rounds: "
                    << format_ms(course::speed::median(student.null_ms)) << ")"
                    << "; the workers' own CUDA-event time per call (information only, never judged): reference "
                    << format_ms(course::speed::median(ref1.event_ms)) << ", student "
                    << format_ms(course::speed::median(student.event_ms)));

  if (gate.work.flops > 0 || gate.work.min_bytes > 0) {
    const course::speed::MachinePeak peak = course::speed::peak_from_device(course::query_device(0));
    const course::speed::Plausibility p = course::speed::check_plausible(result.candidate.point, gate.work, peak);
    CHECK_MESSAGE(p.plausible, gate.what << ": " << p.message);
  }

  MESSAGE("course-metric " << gate.metrics.speedup << " " << result.speedup.point);
  MESSAGE("course-metric " << gate.metrics.ci_low << " " << result.speedup.lower);
  MESSAGE("course-metric " << gate.metrics.ci_high << " " << result.speedup.upper);
  MESSAGE("course-metric " << gate.metrics.time_ms << " " << result.candidate.point);
  MESSAGE("course-metric " << gate.metrics.baseline_ms << " " << result.reference.point);
  if (gate.requirement.min_speedup > 0)
    MESSAGE("course-metric " << gate.metrics.required << " " << gate.requirement.min_speedup);
  CHECK_MESSAGE(result.decision.passed, gate.what << ": " << result.summary() << " -- required: "
                                                  << gate.requirement.description << ". "
                                                  << result.decision.explanation);
}

}  // namespace grader
