#include <doctest/doctest.h>

#include <stdexcept>

#include "../test_support.hpp"
#include "manifest.hpp"

using namespace course_grader;

namespace {
const char* kManifest = R"({
  "format": 1, "source_dir": "/src", "build_dir": "/build",
  "variants": [{"name": "exercises", "folder": "/src/exercises"}],
  "labs": [
    {"name": "lab01_conv2d", "device": "cpu", "student_sources": ["conv2d.cpp"],
     "programs": {"exercises": {"target": "lab01_conv2d__exercises", "path": "/build/labs/exercises/lab01_conv2d", "missing": []}}},
    {"name": "lab02_padding_stride", "device": "cpu", "student_sources": ["a.cpp", "b.cpp"],
     "programs": {"exercises": {"target": "lab02_padding_stride__exercises", "path": "", "missing": ["lab02_padding_stride/b.cpp"]}}},
    {"name": "lab10_future", "device": "gpu", "student_sources": ["k.cu"], "programs": {}}
  ]})";
}

TEST_SUITE("unit") {

TEST_CASE("manifest: loads labs, devices, sources and per-variant programs") {
  grader_test::TempDir dir;
  grader_test::write_file(dir / "manifest.json", kManifest);
  const Manifest m = load_manifest(dir / "manifest.json");
  CHECK(m.variants.at("exercises") == "/src/exercises");
  REQUIRE(m.labs.size() == 3);
  CHECK(m.labs[1].student_sources.size() == 2);
  CHECK(m.labs[1].programs.at("exercises").missing.front() == "lab02_padding_stride/b.cpp");
  CHECK(m.labs[2].device == "gpu");
}

TEST_CASE("manifest: a broken or missing file is an error naming it") {
  grader_test::TempDir dir;
  CHECK_THROWS_WITH_AS(load_manifest(dir / "nope.json"), doctest::Contains("nope.json"), std::runtime_error);
  grader_test::write_file(dir / "bad.json", "{\"labs\": 3}");
  CHECK_THROWS_WITH_AS(load_manifest(dir / "bad.json"), doctest::Contains("not a valid lab manifest"), std::runtime_error);
}

TEST_CASE("manifest: labs are named as lab01, 1, 01 or in full, returned in course order") {
  grader_test::TempDir dir;
  grader_test::write_file(dir / "manifest.json", kManifest);
  const Manifest m = load_manifest(dir / "manifest.json");
  CHECK(resolve_labs(m, {}).size() == 3);
  CHECK(resolve_labs(m, {"lab02", "1"}) == std::vector<std::string>{"lab01_conv2d", "lab02_padding_stride"});
  CHECK(resolve_labs(m, {"01", "lab01_conv2d"}) == std::vector<std::string>{"lab01_conv2d"});
  CHECK(resolve_labs(m, {"10"}) == std::vector<std::string>{"lab10_future"});
  CHECK_THROWS_WITH_AS(resolve_labs(m, {"lab07"}), doctest::Contains("unknown lab 'lab07'"), std::invalid_argument);
  CHECK_THROWS_AS(resolve_labs(m, {"lab01_conv"}), std::invalid_argument);
}

}  // TEST_SUITE
