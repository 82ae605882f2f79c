// Grading a class in pieces (a Slurm job array): the complete results record and its reading
// back, merging the pieces, the gradebook's NOT GRADED rows, the infrastructure classification,
// and the options that select students and keep GPU labs elsewhere.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "cli.hpp"
#include "merge_command.hpp"
#include "report_files.hpp"
#include "results_record.hpp"

using namespace course_grader;

namespace {

LabResult timed_lab(double speedup) {
  LabResult lab;
  lab.lab = "lab07_optimized_cuda";
  lab.device = "gpu";
  lab.status = speedup >= 1.0 ? LabStatus::passed : LabStatus::failed;
  lab.cases.push_back({"speed <gate> & \"quoted\"", speedup >= 1.0, 2.5, {"x: 0.9x -- required: 1.0x"}, ""});
  lab.metrics = {{"speedup_vs_reference", speedup, "speed"}, {"speedup_ci_low", speedup - 0.05, "speed"},
                 {"speedup_ci_high", speedup + 0.05, "speed"}, {"speedup_vs_reference_required", 1.0, "speed"},
                 {"pipeline_ms", 0.27 / speedup, "speed"}, {"baseline_reference_ms", 0.27, "speed"}};
  lab.output = "program output";
  lab.files_hash = "00112233aabbccdd";
  return lab;
}

SubmissionResult student(const std::string& name, double speedup) {
  SubmissionResult s;
  s.name = name;
  s.folder = "/class/" + name;
  s.seed = name.size();
  s.host = "node" + std::to_string(name.size());
  s.gpu = "NVIDIA H100 80GB HBM3";
  s.slurm_job = "100_" + std::to_string(name.size());
  s.labs.push_back(timed_lab(speedup));
  return s;
}

GradeRun task(const std::vector<SubmissionResult>& students, std::uint64_t seed = 7) {
  GradeRun run;
  run.seed = seed;
  run.batch = true;
  run.sandbox_mode = "bwrap";
  run.started_at = "2026-11-25T03:00:00Z";
  run.submissions = students;
  return run;
}

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("results record: every field survives the round trip; hidden cases keep the output out") {
  GradeRun run = task({student("alice", 1.2), student("bob", 0.8)});
  run.submissions[1].labs[0].infrastructure = "GPU interference";
  const GradeRun back = read_results_record(results_record(run), "r.json");
  REQUIRE(back.submissions.size() == 2);
  CHECK(back.seed == 7);
  CHECK(back.batch);
  CHECK(back.started_at == "2026-11-25T03:00:00Z");
  const SubmissionResult& bob = back.submissions[1];
  CHECK(bob.host == "node3");
  CHECK(bob.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(bob.slurm_job == "100_3");
  const LabResult& lab = bob.labs[0];
  CHECK(lab.status == LabStatus::failed);
  CHECK(lab.infrastructure == "GPU interference");
  CHECK(lab.cases[0].name == "speed <gate> & \"quoted\"");
  CHECK(lab.cases[0].messages[0] == "x: 0.9x -- required: 1.0x");
  CHECK(lab.output == "program output");
  CHECK(lab.files_hash == "00112233aabbccdd");
  const auto speed = lab_speedup(lab);
  REQUIRE(speed.has_value());
  CHECK(speed->point == doctest::Approx(0.8));
  CHECK(speed->required == doctest::Approx(1.0));
  CHECK(results_record(run)["submissions"][0]["labs"][0]["speedup"]["required"] == 1.0);

  run.hidden_cases = true;
  CHECK(read_results_record(results_record(run), "r.json").submissions[0].labs[0].output.empty());
}

TEST_CASE("results record: anything else is refused with the file's name") {
  CHECK_THROWS_WITH(read_results_record(nlohmann::json::object(), "task-3.json"),
                    doctest::Contains("task-3.json is not a grader results record"));
  nlohmann::json bad = results_record(task({student("alice", 1.2)}));
  bad["submissions"][0]["labs"][0]["status"] = "great";
  CHECK_THROWS_WITH(read_results_record(bad, "task-3.json"), doctest::Contains("status 'great'"));
  bad["submissions"][0]["labs"] = "many";
  CHECK_THROWS_WITH(read_results_record(bad, "task-3.json"), doctest::Contains("'labs' is not a list"));
}

TEST_CASE("merge: tasks of one batch become one gradebook; missing students are NOT GRADED, never 0") {
  const GradeRun merged = merge_runs({task({student("carol", 1.1)}), task({student("alice", 1.3), student("bob", 0.7)})},
                                     {"task-1.json", "task-0.json"}, {"alice", "bob", "carol", "dave"});
  REQUIRE(merged.submissions.size() == 4);
  CHECK(merged.submissions[0].name == "alice");  // sorted by name
  CHECK(merged.submissions[3].name == "dave");
  CHECK(merged.submissions[3].not_graded.find("re-submit") != std::string::npos);
  CHECK(merged.seed == 7);
  const std::string csv = gradebook_csv(merged);
  CHECK(csv.find("submission,lab07_optimized_cuda,lab07_optimized_cuda speedup,gpu,total,max_total\n") == 0);
  CHECK(csv.find("alice,10,1.30 [1.25-1.35],NVIDIA H100 80GB HBM3,10,10\n") != std::string::npos);
  CHECK(csv.find("bob,0,0.70 [0.65-0.75],NVIDIA H100 80GB HBM3,0,10\n") != std::string::npos);
  CHECK(csv.find("dave,NOT GRADED,,,,\n") != std::string::npos);
  CHECK(junit_xml(merged).find("name=\"(not graded)\"") != std::string::npos);
  CHECK(gradescope_results(merged.submissions[3], merged)["output"].get<std::string>().find("NOT GRADED") !=
        std::string::npos);
  // The gate's context is not the student's achievement.
  const auto board = gradescope_results(merged.submissions[0], merged)["leaderboard"];
  for (const auto& entry : board) {
    CHECK(entry["name"].get<std::string>().find("_required") == std::string::npos);
    CHECK(entry["name"].get<std::string>().find("baseline_") == std::string::npos);
  }
  CHECK(board.size() == 4);
}

TEST_CASE("merge: a student graded twice or tasks of another batch are refused, naming the files") {
  CHECK_THROWS_WITH(merge_runs({task({student("alice", 1.3)}), task({student("alice", 0.9)})}, {"a.json", "b.json"}, {}),
                    doctest::Contains("alice is in both a.json and b.json"));
  CHECK_THROWS_WITH(merge_runs({task({student("alice", 1.3)}, 7), task({student("bob", 0.9)}, 8)}, {"a.json", "b.json"}, {}),
                    doctest::Contains("run seeds differ"));
}

TEST_CASE("infrastructure problems are told apart from the student's own failures") {
  LabResult lab;
  lab.status = LabStatus::failed;
  lab.reason = "timed out after 60 s";
  CHECK(infrastructure_problem(lab) == "timeout");
  lab.reason = "crashed with a segmentation fault (SIGSEGV)";
  CHECK(infrastructure_problem(lab) == "");
  lab.cases.push_back({"speed", false, 1, {"LeNet: the reference ran 30% slower ...: the GPU was not ours alone"}, ""});
  CHECK(infrastructure_problem(lab) == "GPU interference");
  lab.sandbox_degraded = true;
  CHECK(infrastructure_problem(lab) == "degraded sandbox");
}

TEST_CASE("files hash: names and bytes both count; an unreadable file is a value too") {
  const auto dir = std::filesystem::temp_directory_path() / ("course_hash_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string a = write("a.cpp", "int x;"), b = write("b.cpp", "int x;");
  CHECK(files_hash({a}).size() == 16);
  CHECK(files_hash({a}) == files_hash({a}));
  CHECK(files_hash({a}) != files_hash({b}));  // same bytes, another name
  write("a.cpp", "int y;");
  CHECK(files_hash({a}) != files_hash({b}));
  CHECK(files_hash({(dir / "gone.cpp").string()}) != files_hash({}));
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: --only, --results, --gpu-elsewhere and merge") {
  const Command c = parse_command_line({"grade", "--submissions", "subs", "--only", "alice,bob,", "--only=carol",
                                        "--results", "r.json", "--gpu-elsewhere", "graded on the cluster"});
  CHECK(c.grade.only == std::vector<std::string>{"alice", "bob", "carol"});
  CHECK(c.grade.results_path == "r.json");
  CHECK(c.grade.gpu_elsewhere == "graded on the cluster");
  CHECK_THROWS_WITH(parse_command_line({"grade", "--only", "alice"}), doctest::Contains("--submissions batch"));
  CHECK_THROWS_WITH(parse_command_line({"grade", "--submissions", "s", "--only", ","}), doctest::Contains("needs submission names"));
  const Command m = parse_command_line({"merge", "--expect", "names.txt", "--csv=g.csv", "a.json", "b.json"});
  REQUIRE(m.kind == Command::Kind::merge);
  CHECK(m.merge.inputs == std::vector<std::string>{"a.json", "b.json"});
  CHECK(m.merge.expect_path == "names.txt");
  CHECK(m.merge.csv_path == "g.csv");
  CHECK_THROWS_WITH(parse_command_line({"merge", "a.json"}), doctest::Contains("writes nothing"));
  CHECK_THROWS_WITH(parse_command_line({"merge", "--csv", "g.csv"}), doctest::Contains("needs results files"));
}

}  // TEST_SUITE
