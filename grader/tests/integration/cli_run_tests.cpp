// course_grader as a program, on fake labs (--no-build with a hand-made manifest): exit codes,
// the terminal report and the report files for one submission and for a batch.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../test_support.hpp"
#include "build_driver.hpp"
#include "grade_command.hpp"
#include "gpu_probe.hpp"

using course_grader::CommandResult;
using course_grader::run_command;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// <dir>/bin/<behaviour>/<program>: the fake lab reads its behaviour from that folder name.
std::string fake_program(const grader_test::TempDir& dir, const std::string& behaviour, bool gpu = false) {
  const std::string path = dir / ("bin/" + behaviour + (gpu ? "/fake_gpu_lab" : "/fake_cpu_lab"));
  fs::create_directories(fs::path(path).parent_path());
  if (!fs::exists(path)) fs::create_symlink(gpu ? FAKE_GPU_LAB : FAKE_CPU_LAB, path);
  return path;
}

nlohmann::json program(const std::string& path, std::vector<std::string> missing = {}) {
  return {{"target", "unused"}, {"path", path}, {"missing", missing}};
}

// A manifest with the two fake labs; `programs` maps variant -> (cpu program, gpu program).
std::string write_manifest(const grader_test::TempDir& dir, const nlohmann::json& cpu_programs,
                           const nlohmann::json& gpu_programs, const nlohmann::json& variants) {
  const nlohmann::json manifest = {
      {"format", 1},
      {"source_dir", dir.path()},
      {"build_dir", dir.path()},
      {"variants", variants},
      {"labs",
       {{{"name", "fake_cpu_lab"}, {"device", "cpu"}, {"student_sources", {"fake.cpp"}}, {"programs", cpu_programs}},
        {{"name", "fake_gpu_lab"}, {"device", "gpu"}, {"student_sources", {"kernel.cu"}}, {"programs", gpu_programs}}}}};
  grader_test::write_file(dir / "manifest.json", manifest.dump(2));
  return dir / "manifest.json";
}

CommandResult grader(std::vector<std::string> args) {
  args.insert(args.begin(), COURSE_GRADER_EXE);
  return run_command(args);
}

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("cli: --help and usage errors") {
  const CommandResult help = grader({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(contains(help.output, "--submissions DIR"));
  CHECK(grader({"grade", "--frobnicate"}).exit_code == 2);
  grader_test::TempDir dir;
  grader_test::write_file(dir / "not-empty/file", "x");
  const CommandResult handout = grader({"handout", dir / "not-empty"});
  CHECK(handout.exit_code == 2);
  CHECK(contains(handout.output, "not an empty folder"));
}

TEST_CASE("cli: one submission: terminal report, results.json, JUnit; exit code 0 when all pass") {
  grader_test::TempDir dir;
  const std::string manifest = write_manifest(
      dir, {{"exercises", program(fake_program(dir, "pass"))}}, {{"exercises", program(fake_program(dir, "pass", true))}},
      {{{"name", "exercises"}, {"folder", dir / "exercises"}}});
  const CommandResult r = grader({"grade", "--no-build", "--manifest", manifest, "--json", dir / "out/results.json",
                                  "--junit", dir / "out/junit.xml", "--timeout", "10"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "fake_cpu_lab"));
  CHECK(contains(r.output, "PASSED"));
  CHECK_FALSE(contains(r.output, "\033["));  // not a terminal: no colour
  const auto results = nlohmann::json::parse(grader_test::read_file(dir / "out/results.json"));
  CHECK(results["score"] == results["max_score"]);
  CHECK(results["tests"].size() == 2);
  CHECK(contains(grader_test::read_file(dir / "out/junit.xml"), "<testsuites"));
  // Choosing one lab, by number or name; an unknown lab is a usage error.
  CHECK(grader({"grade", "--no-build", "--manifest", manifest, "fake_cpu_lab"}).exit_code == 0);
  const CommandResult unknown = grader({"grade", "--no-build", "--manifest", manifest, "lab99"});
  CHECK(unknown.exit_code == 2);
  CHECK(contains(unknown.output, "unknown lab 'lab99'"));
}

TEST_CASE("cli: a failing lab gives exit code 1 and a next step naming the file to edit") {
  grader_test::TempDir dir;
  const std::string manifest = write_manifest(
      dir, {{"exercises", program(fake_program(dir, "not_implemented"))}},
      {{"exercises", program(fake_program(dir, "pass", true))}}, {{{"name", "exercises"}, {"folder", dir / "ex"}}});
  const CommandResult r = grader({"grade", "--no-build", "--manifest", manifest, "--source-dir", dir.path()});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "Next: fake_cpu_lab: not implemented: fake::second_function"));
  CHECK(contains(r.output, "fake_cpu_lab/fake.cpp"));
  CHECK(contains(r.output, "./course grade fake"));
}

TEST_CASE("cli: many submissions: gradebook CSV, per-submission results, a crash in one does not stop the rest") {
  grader_test::TempDir dir;
  fs::create_directories(dir / "subs/alice");
  fs::create_directories(dir / "subs/bob");
  const std::string manifest = write_manifest(
      dir,
      {{"alice", program(fake_program(dir, "pass"))}, {"bob", program(fake_program(dir, "segfault"))}},
      {{"alice", program(fake_program(dir, "pass", true))}, {"bob", program("", {"fake_gpu_lab/kernel.cu"})}},
      {{{"name", "alice"}, {"folder", dir / "subs/alice"}}, {{"name", "bob"}, {"folder", dir / "subs/bob"}}});
  const CommandResult r = grader({"grade", "--no-build", "--manifest", manifest, "--submissions", dir / "subs", "--csv",
                                  dir / "gradebook.csv", "--json", dir / "all.json", "--junit", dir / "junit.xml"});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  const bool gpu = course_grader::probe_gpu().available;
  CHECK(grader_test::read_file(dir / "gradebook.csv") ==
        std::string("submission,fake_cpu_lab,fake_gpu_lab,total,max_total\n") +
            (gpu ? "alice,10,10,20,20\n" : "alice,10,skipped,10,10\n") + "bob,0,0,0,20\n");
  const auto all = nlohmann::json::parse(grader_test::read_file(dir / "all.json"));
  CHECK(all["submissions"]["bob"]["score"] == 0);
  CHECK(contains(all["submissions"]["bob"]["tests"][0]["output"].get<std::string>(), "SIGSEGV"));
  CHECK(contains(all["submissions"]["bob"]["tests"][1]["output"].get<std::string>(), "not built"));
  CHECK(contains(grader_test::read_file(dir / "junit.xml"), "segmentation fault"));
  CHECK(contains(r.output, "submission"));
}

TEST_CASE("cli: a GPU lab this build could not compile (no CUDA toolkit) is skipped with its reason, 0 of 0 points") {
  grader_test::TempDir dir;
  fs::create_directories(dir / "ex");
  const nlohmann::json variants = {{{"name", "exercises"}, {"folder", dir / "ex"}}};
  nlohmann::json manifest = {
      {"format", 1},
      {"source_dir", dir.path()},
      {"build_dir", dir.path()},
      {"variants", variants},
      {"labs",
       {{{"name", "fake_cpu_lab"}, {"device", "cpu"}, {"student_sources", {"fake.cpp"}},
         {"programs", {{"exercises", program(fake_program(dir, "pass"))}}}},
        {{"name", "fake_gpu_lab"}, {"device", "gpu"}, {"student_sources", nlohmann::json::array()},
         {"not_built_reason", "not built: no CUDA toolkit (install it)"},
         // No program path: the grader must not try to run (or fail) it.
         {"programs", {{"exercises", program("")}}}}}}};
  grader_test::write_file(dir / "manifest.json", manifest.dump(2));
  const CommandResult r = grader({"grade", "--no-build", "--manifest", dir / "manifest.json", "--source-dir", dir.path(),
                                  "--json", dir / "results.json", "--csv", dir / "grades.csv"});
  INFO(r.output);
  CHECK(r.exit_code == 0);  // skipped is not failed
  CHECK(contains(r.output, "SKIPPED"));
  CHECK(contains(r.output, "not built: no CUDA toolkit (install it)"));
  CHECK(contains(r.output, "1 of 1 labs passed, 1 skipped (no CUDA toolkit)"));
  const auto results = nlohmann::json::parse(grader_test::read_file(dir / "results.json"));
  CHECK(results["score"] == 10);
  CHECK(results["max_score"] == 10);
  CHECK(results["tests"][1]["name"] == "fake_gpu_lab (skipped: no CUDA toolkit)");
  CHECK(results["tests"][1]["max_score"] == 0);
  CHECK(contains(results["output"].get<std::string>(), "1 GPU lab(s) skipped: no CUDA toolkit"));
  CHECK(grader_test::read_file(dir / "grades.csv") ==
        "submission,fake_cpu_lab,fake_gpu_lab,total,max_total\nexercises,10,skipped,10,10\n");
}

TEST_CASE("cli: a batch gives every submission its own seed from the run seed and its name, replayable") {
  // Documented rule (grade_command.hpp student_seed): FNV-1a-64("<run seed>:<name>") mod 1e9.
  CHECK(course_grader::student_seed(4242, "alice") == 969490079u);
  CHECK(course_grader::student_seed(4242, "bob") == 159632508u);
  CHECK(course_grader::student_seed(4243, "alice") != course_grader::student_seed(4242, "alice"));
  grader_test::TempDir dir;
  fs::create_directories(dir / "subs/alice");
  fs::create_directories(dir / "subs/bob");
  const std::string manifest = write_manifest(
      dir, {{"alice", program(fake_program(dir, "pass"))}, {"bob", program(fake_program(dir, "pass"))}},
      {{"alice", program("", {"fake_gpu_lab/kernel.cu"})}, {"bob", program("", {"fake_gpu_lab/kernel.cu"})}},
      {{{"name", "alice"}, {"folder", dir / "subs/alice"}}, {{"name", "bob"}, {"folder", dir / "subs/bob"}}});
  ::setenv("COURSE_SEED", "4242", 1);
  const CommandResult batch = grader({"grade", "--no-build", "--manifest", manifest, "--submissions", dir / "subs",
                                      "--json", dir / "all.json", "--junit", dir / "junit.xml", "fake_cpu_lab"});
  const CommandResult again = grader({"grade", "--no-build", "--manifest", manifest, "--submissions", dir / "subs",
                                      "--junit", dir / "again.xml", "fake_cpu_lab"});
  INFO(batch.output);
  CHECK(batch.exit_code == 0);
  CHECK(again.exit_code == 0);
  CHECK(contains(batch.output, "run seed 4242"));
  CHECK(contains(batch.output, "seed 969490079"));
  CHECK(contains(batch.output, "seed 159632508"));
  // Each lab program really ran with its student's seed (the program prints it first).
  const std::string junit = grader_test::read_file(dir / "junit.xml");
  CHECK(contains(junit, "fake_cpu_lab: seed 969490079"));
  CHECK(contains(junit, "fake_cpu_lab: seed 159632508"));
  CHECK_FALSE(contains(junit, "fake_cpu_lab: seed 4242 "));
  const auto all = nlohmann::json::parse(grader_test::read_file(dir / "all.json"));
  CHECK(contains(all["submissions"]["alice"]["output"].get<std::string>(), "Seed 969490079"));
  CHECK(contains(all["submissions"]["bob"]["output"].get<std::string>(), "Seed 159632508"));
  // The same run seed replays every student's seed.
  CHECK(contains(grader_test::read_file(dir / "again.xml"), "fake_cpu_lab: seed 159632508"));
  // The student's seed alone replays that student: --submission takes COURSE_SEED as it is.
  ::setenv("COURSE_SEED", "159632508", 1);
  const CommandResult alone = grader({"grade", "--no-build", "--manifest", manifest, "--submission", dir / "subs/bob",
                                      "--junit", dir / "alone.xml", "fake_cpu_lab"});
  ::unsetenv("COURSE_SEED");
  INFO(alone.output);
  CHECK(alone.exit_code == 0);
  CHECK(contains(grader_test::read_file(dir / "alone.xml"), "fake_cpu_lab: seed 159632508"));
}

TEST_CASE("cli: --hidden in sandbox mode none is refused without --allow-degraded; with it every report says DEGRADED") {
  grader_test::TempDir dir;
  fs::create_directories(dir / "hidden");
  fs::create_directories(dir / "subs/alice");
  const std::string manifest = write_manifest(
      dir, {{"alice", program(fake_program(dir, "pass"))}}, {{"alice", program("", {"fake_gpu_lab/kernel.cu"})}},
      {{{"name", "alice"}, {"folder", dir / "subs/alice"}}});
  ::setenv("COURSE_SANDBOX", "none", 1);
  const CommandResult refused = grader({"grade", "--no-build", "--manifest", manifest, "--submissions", dir / "subs",
                                        "--hidden", dir / "hidden", "--json", dir / "refused.json", "fake_cpu_lab"});
  const CommandResult allowed =
      grader({"grade", "--no-build", "--manifest", manifest, "--submissions", dir / "subs", "--hidden", dir / "hidden",
              "--allow-degraded", "--json", dir / "all.json", "--junit", dir / "junit.xml", "--csv", dir / "book.csv",
              "fake_cpu_lab"});
  const CommandResult no_hidden =
      grader({"grade", "--no-build", "--manifest", manifest, "--submissions", dir / "subs", "fake_cpu_lab"});
  ::unsetenv("COURSE_SANDBOX");
  {
    INFO(refused.output);
    CHECK(refused.exit_code == 2);
    CHECK(contains(refused.output, "--hidden refused"));
    CHECK(contains(refused.output, "could read the hidden cases"));
    CHECK(contains(refused.output, "run the grader as root"));
    CHECK(contains(refused.output, "user namespaces"));
    CHECK(contains(refused.output, "--allow-degraded"));
    CHECK_FALSE(fs::exists(dir / "refused.json"));  // nothing was graded
  }
  INFO(allowed.output);
  CHECK(allowed.exit_code == 0);
  CHECK(contains(allowed.output, "DEGRADED: student code ran WITHOUT isolation (sandbox mode none)"));
  const auto all = nlohmann::json::parse(grader_test::read_file(dir / "all.json"));
  CHECK(contains(all["output"].get<std::string>(), "DEGRADED"));  // one submission: one results object
  CHECK(contains(grader_test::read_file(dir / "junit.xml"), "DEGRADED"));
  CHECK(contains(grader_test::read_file(dir / "book.csv"), "DEGRADED"));
  // Without hidden cases there is nothing to protect: graded, and still said plainly.
  CHECK(no_hidden.exit_code == 0);
  CHECK(contains(no_hidden.output, "DEGRADED"));
}

}  // TEST_SUITE
