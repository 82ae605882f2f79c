// What every lab's tests use: the run's random seed, tensor checks that fail with the first
// mismatching indices, and helpers that make outputs hard to fake.
//
//   TEST_CASE("conv2d: random shapes") {
//     course::Rng& rng = grader::rng();              // seeded once per run, seed printed
//     Tensor x = rng.tensor({2, 3, 8, 8});
//     Tensor out = grader::poisoned(expected.shape()); // NaN everywhere: unwritten = failure
//     lab01::conv2d_forward(x, w, b, out);
//     grader::check_tensor("conv2d output", out, expected, {1e-5, 1e-4});
//   }
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "course/compare.hpp"
#include "course/error.hpp"
#include "course/rng.hpp"
#include "course/tensor.hpp"

namespace grader {

/// The seed of this run: COURSE_SEED if set, else fresh. Printed by the runner before any test.
std::uint64_t seed();
/// A generator seeded from seed() (one per process; tests draw from it in order).
course::Rng& rng();
/// A generator for one test case: seed() mixed with the case's name, so a case's inputs do not
/// depend on which other cases ran before it (running one case alone replays it exactly).
course::Rng case_rng(const std::string& case_name);

/// A tensor of this shape filled with NaN: any element the code under test forgets to write
/// stays NaN and fails check_tensor.
course::Tensor poisoned(const course::Shape& shape);

/// Images [begin, begin + count) of an [N, C, H, W] tensor, as a new tensor (for running a network
/// on part of a test split).
inline course::Tensor image_slice(const course::Tensor& images, std::int64_t begin, std::int64_t count) {
  const std::int64_t per_image = images.dim(1) * images.dim(2) * images.dim(3);
  course::Tensor out(course::Shape{count, images.dim(1), images.dim(2), images.dim(3)});
  const float* src = images.data() + begin * per_image;
  std::copy(src, src + count * per_image, out.data());
  return out;
}

/// CHECKs that `actual` matches `expected` (shape, values within tolerance, no NaN/Inf); on
/// failure the message names `what`, the seed, and the first mismatches with their indices.
/// Returns true if it matched.
bool check_tensor(const std::string& what, const course::Tensor& actual, const course::Tensor& expected,
                  const course::Tolerance& tol = {});

/// CHECKs that `call` throws course::Error (not "not implemented") whose message contains `part`.
void check_rejects(const std::string& what, const std::function<void()>& call, const std::string& part = "");

}  // namespace grader

#include <nlohmann/json.hpp>
#include <vector>

namespace grader {

/// Instructor-supplied hidden cases for this lab. If the environment variable COURSE_HIDDEN_DIR
/// names a folder that holds "<lab>.json" (lab = COURSE_LAB_NAME, e.g. lab01_conv2d.json), this
/// returns the "cases" array of that file: {"cases": [ {...}, ... ]}. The keys of each case are
/// defined by the lab's tests (documented at the top of the lab's test file). Without the
/// variable or the file it returns an empty list. A malformed file throws course::Error.
std::vector<nlohmann::json> hidden_cases(const std::string& lab);

}  // namespace grader

#include <optional>

namespace grader {

/// For the tests that prove a lab's hidden-case mechanism works: points COURSE_HIDDEN_DIR at a
/// fresh temporary folder while the object lives, then restores the previous value and deletes
/// the folder.
class TemporaryHiddenDir {
 public:
  TemporaryHiddenDir();
  ~TemporaryHiddenDir();
  TemporaryHiddenDir(const TemporaryHiddenDir&) = delete;
  TemporaryHiddenDir& operator=(const TemporaryHiddenDir&) = delete;

  /// Writes <folder>/<lab>.json with this text (replacing an earlier one).
  void write(const std::string& lab, const std::string& json_text) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::optional<std::string> previous_;
};

}  // namespace grader

#include "course/safetensors.hpp"

namespace grader {

/// A committed PyTorch fixture file from grader/fixtures/ (made by data/tools/fixtures_*.py),
/// read once per run. Throws course::Error if it cannot be read.
const course::TensorFile& fixture_file(const std::string& file_name);
/// One tensor of such a file; throws course::Error naming the file and the tensor if missing.
const course::Tensor& fixture_tensor(const std::string& file_name, const std::string& tensor_name);

}  // namespace grader
