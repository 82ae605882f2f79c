// The grader's tests: test suites "unit", "isolation" and "cli" (see CMakeLists.txt).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
