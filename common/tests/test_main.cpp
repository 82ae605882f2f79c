// doctest's main for the CPU unit tests; prints the random seed first so failures can be replayed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>

#include "course/rng.hpp"

int main(int argc, char** argv) {
  std::cout << "common unit tests (replay random inputs with COURSE_SEED=<seed>)\n";
  doctest::Context context(argc, argv);
  return context.run();
}
