#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"

using namespace course_grader;

namespace {
Command parse(std::vector<std::string> args) { return parse_command_line(args); }
}  // namespace

TEST_SUITE("unit") {

TEST_CASE("cli: help in every spelling, and without arguments") {
  CHECK(parse({}).kind == Command::Kind::help);
  CHECK(parse({"--help"}).kind == Command::Kind::help);
  CHECK(parse({"grade", "-h"}).kind == Command::Kind::help);
  CHECK(help_text().find("--submissions DIR") != std::string::npos);
}

TEST_CASE("cli: grade with everything the ./course script passes") {
  const Command c = parse({"grade", "--submission", "sub", "--hidden", "h", "--json", "r.json", "--junit=j.xml",
                           "--csv", "g.csv", "--timeout", "2.5", "--memory-mb", "512", "lab01", "3",
                           "--source-dir", "/repo", "--build-dir", "/repo/build", "-j", "2"});
  REQUIRE(c.kind == Command::Kind::grade);
  const GradeOptions& g = c.grade;
  CHECK(g.mode == Mode::submission);
  CHECK(g.submission_path == "sub");
  CHECK(g.hidden_dir == "h");
  CHECK(g.json_path == "r.json");
  CHECK(g.junit_path == "j.xml");
  CHECK(g.csv_path == "g.csv");
  CHECK(g.timeout_s == doctest::Approx(2.5));
  CHECK(g.memory_mb == 512);
  CHECK(g.labs == std::vector<std::string>{"lab01", "3"});
  CHECK(g.source_dir == "/repo");
  CHECK(g.build_dir == "/repo/build");
  CHECK(g.jobs == 2);
}

TEST_CASE("cli: defaults") {
  const GradeOptions g = parse({"grade"}).grade;
  CHECK(g.mode == Mode::exercises);
  CHECK(g.timeout_s == 60);
  CHECK(g.memory_mb == 2048);
  CHECK(g.labs.empty());
  CHECK(!g.compile_gpu_labs);
  CHECK(parse({"grade", "--source-dir", "/x"}).grade.build_dir == "/x/build");
  CHECK(parse({"grade", "--compile-gpu-labs", "lab06"}).grade.compile_gpu_labs);
}

TEST_CASE("cli: mistakes are usage errors that say what is wrong") {
  CHECK_THROWS_WITH_AS(parse({"grade", "--frobnicate"}), doctest::Contains("--frobnicate"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"grade", "--solutions", "--submission", "x"}), doctest::Contains("only one of"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"grade", "--timeout", "soon"}), doctest::Contains("positive number"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"grade", "--timeout", "-1"}), doctest::Contains("positive number"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"grade", "--memory-mb", "1.5"}), doctest::Contains("whole number"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"grade", "--json"}), doctest::Contains("needs a value"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"grade", "--no-build", "--build-only"}), doctest::Contains("contradict"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"teleport"}), doctest::Contains("unknown command"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"handout"}), doctest::Contains("destination"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"handout", "a", "b"}), doctest::Contains("one destination"), UsageError);
}

TEST_CASE("cli: numeric options are parsed strictly and range-checked, naming the option") {
  // Each of these once overflowed an int (or a later shift into bytes) or slipped through strtod.
  const std::vector<std::pair<std::string, std::string>> rejected = {
      {"--memory-mb", "1e10"}, {"--memory-mb", "99999999999999999999"}, {"--memory-mb", "4194305"},
      {"--memory-mb", "0"},    {"--memory-mb", "-5"},                  {"--memory-mb", " 512"},
      {"--memory-mb", "512k"}, {"--memory-mb", "0x200"},               {"--memory-mb", ""},
      {"--jobs", "1e9"},       {"--jobs", "2147483648"},               {"-j", "1025"},
      {"--points", "1e10"},    {"--points", "1000001"},                {"--points", "+3"},
      {"--timeout", "1e400"},  {"--timeout", "inf"},                   {"--timeout", "nan"},
      {"--timeout", "1e3"},    {"--timeout", "0x10"},                  {"--timeout", "604801"},
      {"--timeout", "0"},      {"--timeout", "1.2.3"},                 {"--timeout", "."}};
  for (const auto& [option, text] : rejected) {
    CAPTURE(option);
    CAPTURE(text);
    const std::string names_option = option + " needs a", quotes_value = "'" + text + "'";
    CHECK_THROWS_WITH_AS(parse({"grade", option, text}), doctest::Contains(names_option.c_str()), UsageError);
    CHECK_THROWS_WITH_AS(parse({"grade", option + "=" + text}), doctest::Contains(quotes_value.c_str()), UsageError);
  }
  CHECK_THROWS_WITH_AS(parse({"grade", "--memory-mb", "1e10"}), doctest::Contains("whole number from 1 to 4194304"),
                       UsageError);
  // The largest accepted values are taken exactly.
  const GradeOptions g = parse({"grade", "--memory-mb", "4194304", "--jobs", "1024", "--points", "1000000",
                                "--timeout", "604800"}).grade;
  CHECK(g.memory_mb == 4194304);
  CHECK(g.jobs == 1024);
  CHECK(g.points == 1000000);
  CHECK(g.timeout_s == doctest::Approx(604800));
  CHECK(parse({"grade", "--timeout=.5"}).grade.timeout_s == doctest::Approx(0.5));
}

TEST_CASE("cli: handout") {
  const Command c = parse({"handout", "/tmp/out", "--source-dir", "/repo"});
  REQUIRE(c.kind == Command::Kind::handout);
  CHECK(c.handout.destination == "/tmp/out");
  CHECK(c.handout.source_dir == "/repo");
}

}  // TEST_SUITE
