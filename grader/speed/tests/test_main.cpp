// doctest's main for the speed-scoring unit tests. They use fixed seeds on purpose: they check
// statistical properties with tolerances, and a fixed seed makes a pass or a fail reproducible.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
