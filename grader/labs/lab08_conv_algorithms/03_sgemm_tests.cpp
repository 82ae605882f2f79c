// Lab 08 tests, part 3: sgemm against the golden matrix product in double: a worked example,
// every combination of M, N, K in {1, 7, 63, 65, 129, 257} (one below and one above the tile
// sizes, and far from any multiple), thin and long shapes, and products large enough for the
// reference's 128x128 tiles. The bias is null in half of the cases.
#include <string>

#include "lab08_test_support.hpp"

using course::Shape;
using course::Tensor;

namespace {

void check_gemm_case(const std::string& what, course::Rng& rng, int M, int N, int K, bool with_bias) {
  const Tensor a = rng.tensor({M, K}), b = rng.tensor({K, N});
  const Tensor bias = with_bias ? rng.tensor({M}) : Tensor();
  const Tensor expected = golden::lab08_gemm(a, b, bias);
  Tensor c = grader::poisoned({M, N});
  lab08_harness::sgemm(a, b, bias, c);
  grader::check_tensor(what + " (M " + std::to_string(M) + ", N " + std::to_string(N) + ", K " + std::to_string(K) +
                           (with_bias ? ", bias" : ", d_bias = nullptr") + ")",
                       c, expected, lab08_tests::gemm_tolerance(K));
}

}  // namespace

TEST_CASE("sgemm: the worked example -- [2x3] x [3x2], without and with a bias") {
  const Tensor a(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b(Shape{3, 2}, {7, 8, 9, 10, 11, 12});
  // Row 0: 1*7 + 2*9 + 3*11 = 58, 1*8 + 2*10 + 3*12 = 64; row 1: 139, 154.
  Tensor c = grader::poisoned({2, 2});
  lab08_harness::sgemm(a, b, Tensor(), c);
  grader::check_tensor("no bias", c, Tensor(Shape{2, 2}, {58, 64, 139, 154}), lab08_tests::kExact);
  Tensor cb = grader::poisoned({2, 2});
  lab08_harness::sgemm(a, b, Tensor(Shape{2}, {1.0f, -1.0f}), cb);  // the bias is per ROW of C
  grader::check_tensor("bias [1, -1]", cb, Tensor(Shape{2, 2}, {59, 65, 138, 153}), lab08_tests::kExact);
}

TEST_CASE("sgemm: every M, N, K in {1, 7, 63, 65, 129, 257}") {
  course::Rng rng = grader::case_rng("sgemm: sizes");
  const int sizes[] = {1, 7, 63, 65, 129, 257};
  int i = 0;
  for (int M : sizes)
    for (int N : sizes)
      for (int K : sizes) check_gemm_case("sizes", rng, M, N, K, (i++ % 2) == 0);
}

TEST_CASE("sgemm: thin and long shapes -- a row, a column, K = 1, a long K") {
  course::Rng rng = grader::case_rng("sgemm: thin");
  check_gemm_case("one row of C", rng, 1, 5000, 300, true);
  check_gemm_case("one column of C", rng, 5000, 1, 300, true);
  check_gemm_case("K = 1 (an outer product)", rng, 300, 301, 1, false);
  check_gemm_case("long K", rng, 100, 90, 2000, true);
  check_gemm_case("1 x 1 x 1", rng, 1, 1, 1, true);
}

TEST_CASE("sgemm: large products, both tile sizes, partial tiles in every dimension") {
  // The reference switches to 128x128 tiles when there are at least 132 of them (one per SM of
  // an H100): 13 x 13 = 169 tiles here, with 7, 13 and 3 left over in M, N and K.
  course::Rng rng = grader::case_rng("sgemm: large");
  check_gemm_case("large, partial tiles", rng, 1543, 1549, 67, true);
  check_gemm_case("large, whole tiles", rng, 1536, 1536, 64, false);
  check_gemm_case("medium (64x64 tiles)", rng, 600, 500, 200, true);
}

TEST_CASE("sgemm: under the sanitizers -- both tile sizes, several K slices, partial tiles") {
  // Sized for compute-sanitizer (memcheck and racecheck run this case again): 5 K slices on the
  // 64x64 tiles; 12 x 13 = 156 tiles of 128x128 with 3 K slices, the last one partial. A
  // missing barrier between the multiply and the next slice's loads is a race racecheck reports.
  course::Rng rng = grader::case_rng("sgemm: sanitizers");
  check_gemm_case("64x64 tiles", rng, 200, 300, 40, true);
  check_gemm_case("128x128 tiles", rng, 1409, 1537, 20, false);
}
