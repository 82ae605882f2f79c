#include <doctest/doctest.h>

#include <filesystem>
#include <stdexcept>

#include "../test_support.hpp"
#include "build_driver.hpp"

using namespace course_grader;

TEST_SUITE("unit") {

TEST_CASE("build: submission names are reduced to [A-Za-z0-9_]") {
  CHECK(sanitize_name("alice") == "alice");
  CHECK(sanitize_name("Bob Smith-2 (late)") == "Bob_Smith_2__late_");
  CHECK(sanitize_name("ü") == "__");
  CHECK(sanitize_name("") == "submission");
}

TEST_CASE("build: a folder of submissions, sorted, unique names, exercises/ inside accepted") {
  grader_test::TempDir dir;
  for (const char* d : {"bob/lab01_conv2d", "alice smith/lab01_conv2d", "alice_smith/lab01_conv2d",
                        "carol/exercises/lab01_conv2d", ".hidden/lab01_conv2d"})
    std::filesystem::create_directories(dir / d);
  const auto subs = find_submissions(dir.path());
  REQUIRE(subs.size() == 4);
  CHECK(subs[0].name == "alice_smith");
  CHECK(subs[1].name == "alice_smith_2");
  CHECK(subs[2].name == "bob");
  CHECK(subs[3].name == "carol");
  CHECK(subs[3].folder == dir / "carol/exercises");
  CHECK(variants_value({subs[2], subs[3]}) == "bob=" + (dir / "bob") + ";carol=" + (dir / "carol/exercises"));
  CHECK_THROWS_AS(variants_value({{"x", "/a;b"}}), std::invalid_argument);
}

TEST_CASE("build: the first compiler error is found in a build log, without the build tool's noise") {
  const std::string log =
      "[ 10%] Building CXX object common/CMakeFiles/course_common.dir/src/tensor.cpp.o\n"
      "[ 20%] Building CXX object labs/CMakeFiles/lab01.dir/conv2d.cpp.o\n"
      "/sub/alice/lab01_conv2d/conv2d.cpp: In function 'void lab01::conv2d_forward()':\n"
      "/sub/alice/lab01_conv2d/conv2d.cpp:12:5: error: 'x' was not declared in this scope\n"
      "   12 |     x = 1;\n"
      "      |     ^\n"
      "gmake[3]: *** [labs/CMakeFiles/lab01.dir/build.make:76: conv2d.cpp.o] Error 1\n"
      "/sub/alice/lab01_conv2d/conv2d.cpp:20:1: error: expected '}' at end of input\n"
      "gmake[2]: *** [CMakeFiles/Makefile2:415: all] Error 2\n";
  const std::string errors = first_errors(log, 4);
  CHECK(errors ==
        "/sub/alice/lab01_conv2d/conv2d.cpp: In function 'void lab01::conv2d_forward()':\n"
        "/sub/alice/lab01_conv2d/conv2d.cpp:12:5: error: 'x' was not declared in this scope\n"
        "   12 |     x = 1;\n"
        "      |     ^\n");
  CHECK(first_errors("/usr/bin/ld: conv2d.cpp.o: undefined reference to `lab01::helper()'\n")
            .find("undefined reference") != std::string::npos);
  CHECK(first_errors("no error markers\nat all\n") == "no error markers\nat all\n");
}

TEST_CASE("build: cache values are read from CMakeCache.txt") {
  grader_test::TempDir dir;
  grader_test::write_file(dir / "CMakeCache.txt",
                          "// comment\nCMAKE_GENERATOR:INTERNAL=Unix Makefiles\nCOURSE_VARIANTS:STRING=a=/x;b=/y\n");
  CHECK(cache_value(dir.path(), "CMAKE_GENERATOR") == "Unix Makefiles");
  CHECK(cache_value(dir.path(), "COURSE_VARIANTS") == "a=/x;b=/y");
  CHECK(cache_value(dir.path(), "MISSING") == "");
}

TEST_CASE("build: commands run with their output captured and their exit code") {
  const CommandResult ok = run_command({"sh", "-c", "echo out; echo err >&2"});
  CHECK(ok.ok());
  CHECK(ok.output.find("out") != std::string::npos);
  CHECK(ok.output.find("err") != std::string::npos);
  CHECK(run_command({"sh", "-c", "exit 3"}).exit_code == 3);
  const CommandResult missing = run_command({"/nonexistent/program"});
  CHECK_FALSE(missing.ok());
  CHECK(missing.output.find("cannot run") != std::string::npos);
}

TEST_CASE("build: a failed compile shows only lines about the student's own files") {
  // A hostile #include of a hidden case: gcc quotes the case's lines under its own path.
  const std::string log =
      "[ 50%] Building CXX object lab01/conv2d.cpp.o\n"
      "In file included from /subs/alice/lab01_conv2d/conv2d.cpp:90:\n"
      "/secret/hidden/case.json:1:1: error: expected unqualified-id before '{' token\n"
      "    1 | {\"expected\": [0.125, SECRET_VALUE]}\n"
      "      | ^\n"
      "/subs/alice/lab01_conv2d/../../../secret/golden.hpp:7:3: error: 'x' was not declared\n"
      "    7 |   GOLDEN_LINE x;\n"
      "/subs/alice/lab01_conv2d/conv2d.cpp:82:27: error: expected ';' before 'for'\n"
      "   82 |   float sum = b[k]\n"
      "      |                   ^\n"
      "/subs/bob/lab01_conv2d/conv2d.cpp:3:1: error: bob's line\n"
      "/usr/bin/ld: conv2d.cpp.o: in function `lab01::f()': undefined reference to `g'\n"
      "course-guard: conv2d.cpp: calls dlopen, which is not allowed\n"
      "compilation terminated.\n";
  const std::vector<std::string> own = {"/subs/alice", "/course/common/include"};
  const std::string shown = own_files_only(log, own);
  CHECK(shown.find("SECRET_VALUE") == std::string::npos);
  CHECK(shown.find("case.json") == std::string::npos);
  CHECK(shown.find("GOLDEN_LINE") == std::string::npos);  // "..": outside the submission after all
  CHECK(shown.find("bob") == std::string::npos);          // a classmate's folder next to alice's
  CHECK(shown.find("In file included from /subs/alice/lab01_conv2d/conv2d.cpp:90:") != std::string::npos);
  CHECK(shown.find("conv2d.cpp:82:27: error: expected ';' before 'for'") != std::string::npos);
  CHECK(shown.find("   82 |   float sum = b[k]") != std::string::npos);
  CHECK(shown.find("undefined reference to `g'") != std::string::npos);
  CHECK(shown.find("course-guard: conv2d.cpp: calls dlopen") != std::string::npos);
  CHECK(shown.find("(6 lines about files outside your submission not shown)") != std::string::npos);
  // Official grading: the place of the first error about the student's file, nothing of the message.
  CHECK(first_error_location(log, own) == "conv2d.cpp:82:27");
  CHECK(first_error_location("/secret/x.json:1:1: error: y\n", own).empty());
  // nvcc's form.
  CHECK(first_error_location("/subs/alice/lab06/layers.cu(12): error: identifier \"q\" is undefined\n", own) ==
        "layers.cu(12)");
}

}  // TEST_SUITE
