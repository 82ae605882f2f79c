// The lecture's benchmark: NaiveLeNet on the Fashion-MNIST test split (10,000 images in one
// batch) and on a single image, checked against the golden CPU LeNet first, then timed with CUDA
// events (warm-up, median, L2 flushed before each run). What it measures and how:
// grader/labs/lenet_pipeline_bench.hpp.
//
//   build/labs/solutions/lab06_bench [repetitions]     (or build/labs/exercises/lab06_bench)
#include "labs/lab06_naive_cuda.hpp"
#include "lenet_pipeline_bench.hpp"

int main(int argc, char** argv) { return lenet_bench::main_of<lab06::NaiveLeNet>("lab06_bench", argc, argv); }
