// Your FastLeNet timed the way lab 06's benchmark times the naive network: the Fashion-MNIST test
// split (10,000 images in one batch) and a single image, checked against the golden CPU LeNet
// first (logits within 1e-3), then timed with CUDA events (warm-up, median, L2 flushed before each
// run): grader/labs/lenet_pipeline_bench.hpp. Compare with build/labs/solutions/lab06_bench (the
// naive network: the speed gate wants at least 3x) and build/labs/solutions/lab07_bench.
//
//   build/labs/exercises/lab07_bench [repetitions]     (or build/labs/solutions/lab07_bench)
#include "labs/lab07_optimized_cuda.hpp"
#include "lenet_pipeline_bench.hpp"

int main(int argc, char** argv) { return lenet_bench::main_of<lab07::FastLeNet>("lab07_bench", argc, argv); }
