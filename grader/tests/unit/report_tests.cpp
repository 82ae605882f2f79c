// Report writers: escaping, and the shape of results.json, JUnit XML and the gradebook.
#include <doctest/doctest.h>

#include "handout.hpp"
#include "report_files.hpp"
#include "text_util.hpp"
#include "text/inert_text.hpp"

using namespace course_grader;

namespace {

LabResult lab(const std::string& name, LabStatus status, const std::string& reason = "") {
  LabResult l;
  l.lab = name;
  l.status = status;
  l.reason = reason;
  return l;
}

SubmissionResult submission(const std::string& name, const std::string& folder, std::vector<LabResult> labs) {
  SubmissionResult s;
  s.name = name;
  s.folder = folder;
  s.labs = std::move(labs);
  return s;
}

GradeRun sample_run() {
  GradeRun run;
  run.seed = 42;
  run.points_per_lab = 10;
  run.gpu_reason = "no CUDA driver";
  LabResult passed = lab("lab01_conv2d", LabStatus::passed);
  passed.cases.push_back({"conv <small> & \"quoted\"", true, 0.5, {}, ""});
  LabResult failed = lab("lab02_padding_stride", LabStatus::failed, "1 of 1 test cases failed");
  failed.failed_by_cases = true;
  failed.cases.push_back({"pad", false, 0.1, {"x.cpp:3: CHECK(a == b) is 1 == 2\n  mismatch at [0]"}, ""});
  failed.output = std::string("bad byte \xff and bell \a");
  LabResult crashed = lab("lab03_pooling_activations", LabStatus::failed, "crashed with a segmentation fault (SIGSEGV)");
  LabResult skipped = lab("lab06_cuda_naive", LabStatus::skipped, "needs a CUDA GPU (no CUDA driver)");
  LabResult fast = lab("lab07_cuda_optimized", LabStatus::passed);
  fast.metrics.push_back({"speedup_vs_reference", 1.8, "speed"});
  fast.metrics.push_back({"median_ms", 0.25, "speed"});
  run.submissions.push_back(submission("alice", "/s/alice", {passed, failed, crashed, skipped, fast}));
  run.submissions.back().gpu = "NVIDIA H100, =1+1";
  run.submissions.push_back(submission("bob,=evil", "/s/bob", {lab("lab01_conv2d", LabStatus::failed, "does not compile")}));
  return run;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("text: invalid UTF-8 and control characters become '?', valid UTF-8 stays") {
  CHECK(clean_text("ok \xc3\xa9 \xe2\x9c\x93") == "ok \xc3\xa9 \xe2\x9c\x93");
  CHECK(clean_text("\xff\xfe") == "??");
  CHECK(clean_text("\xc0\xaf") == "??");  // overlong '/'
  CHECK(clean_text("\xed\xa0\x80") == "???");  // UTF-16 surrogate
  CHECK(clean_text("a\x01\tb\n") == "a?\tb\n");
  CHECK(clean_text("\xe2\x9c") == "??");  // cut short
}

TEST_CASE("text: C1 controls become '?' (one-character CSI U+009B, NEL U+0085), also as overlong forms") {
  CHECK(clean_text("\xc2\x9b" "2J") == "?2J");            // U+009B CSI: erases the screen on some terminals
  CHECK(clean_text("a\xc2\x85" "b") == "a?b");            // U+0085 NEL: a line break
  CHECK(clean_text("\xc2\x80\xc2\x9f") == "??");        // both ends of the C1 range
  CHECK(clean_text("\xc2\xa0\xc2\xa9") == "\xc2\xa0\xc2\xa9");  // U+00A0, U+00A9 stay
  CHECK(clean_text("\x9b" "31m") == "?31m");               // a raw C1 byte is invalid UTF-8
  CHECK(clean_text("\xc1\x9b") == "??");                  // overlong ESC [ is rejected
  CHECK(clean_text("\x1b[2J\x7f\x07") == "?[2J??");      // C0 and DEL
  CHECK(clean_text("ok\rFAKE") == "okFAKE");               // a carriage return is dropped
}

TEST_CASE("text: bidi embeddings, overrides and isolates become '?'") {
  // U+202A..U+202E (LRE RLE PDF LRO RLO), U+2066..U+2069 (LRI RLI FSI PDI), U+061C, LRM/RLM.
  for (const char* ch : {"\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad", "\xe2\x80\xae",
                         "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9", "\xd8\x9c",
                         "\xe2\x80\x8e", "\xe2\x80\x8f"})
    CHECK_MESSAGE(clean_text(std::string("x") + ch + "y") == "x?y", "bytes " << ch);
  CHECK(clean_text("Status: \xe2\x80\xae!SSECCUS") == "Status: ?!SSECCUS");
}

TEST_CASE("text: zero-width, separator and other format characters become '?'") {
  // U+200B..U+200D, U+2028, U+2029, U+2060..U+2064, U+FEFF, U+00AD, U+E0041 (a tag character).
  for (const char* ch : {"\xe2\x80\x8b", "\xe2\x80\x8c", "\xe2\x80\x8d", "\xe2\x80\xa8", "\xe2\x80\xa9",
                         "\xe2\x81\xa0", "\xe2\x81\xa4", "\xef\xbb\xbf", "\xc2\xad", "\xf3\xa0\x81\x81"})
    CHECK_MESSAGE(clean_text(std::string("x") + ch + "y") == "x?y", "bytes " << ch);
  // Neighbours of the ranges stay: U+200A (hair space), U+2030 (per mille), U+2065 is unassigned
  // but harmless, U+FEFE, an emoji.
  for (const char* ch : {"\xe2\x80\x8a", "\xe2\x80\xb0", "\xef\xbb\xbe", "\xf0\x9f\x98\x80"})
    CHECK_MESSAGE(clean_text(std::string("x") + ch + "y") == std::string("x") + ch + "y", "bytes " << ch);
  CHECK(grader::text::is_unsafe_code_point(0x202e));
  CHECK_FALSE(grader::text::is_unsafe_code_point(0x20ac));  // the euro sign
}

TEST_CASE("text: a UTF-8 character cut at the end of a piece of a stream is held back, nothing else") {
  using grader::text::incomplete_utf8_tail;
  CHECK(incomplete_utf8_tail("abc") == 0);
  CHECK(incomplete_utf8_tail("") == 0);
  CHECK(incomplete_utf8_tail("a\xc3") == 1);              // first byte of a 2-byte character
  CHECK(incomplete_utf8_tail("a\xc3\xa9") == 0);          // complete
  CHECK(incomplete_utf8_tail("a\xe2\x80") == 2);          // 2 of 3 bytes
  CHECK(incomplete_utf8_tail("a\xf0\x9f\x98") == 3);      // 3 of 4 bytes
  CHECK(incomplete_utf8_tail("a\xf0\x9f\x98\x80") == 0);  // complete
  CHECK(incomplete_utf8_tail("a\x80\x80\x80\x80") == 0);  // stray continuation bytes: cleaned now
  // Held back and joined, a split C1 control is still replaced; a split letter survives.
  const std::string first = "x\xc2", second = "\x9b" "2J";
  const std::size_t keep = incomplete_utf8_tail(first);
  CHECK(clean_text(first.substr(0, first.size() - keep)) + clean_text(first.substr(first.size() - keep) + second) == "x?2J");
}

TEST_CASE("text: make_inert cleans every text field of a lab result") {
  LabResult lab;
  const std::string evil = "\xc2\x9b" "2J\xe2\x81\xa7Status: SUCCESS!";
  lab.reason = lab.hint = lab.details = lab.output = lab.sanitizer_report = lab.sandbox = evil;
  lab.notes = {evil};
  lab.cases.push_back(CaseResult{evil, false, 0, {evil}, evil});
  make_inert(lab);
  const std::string want = "?2J?Status: SUCCESS!";
  for (const std::string* field : {&lab.reason, &lab.hint, &lab.details, &lab.output, &lab.sanitizer_report, &lab.sandbox,
                                   &lab.notes[0], &lab.cases[0].name, &lab.cases[0].messages[0], &lab.cases[0].exception})
    CHECK(*field == want);
}

TEST_CASE("text: XML escaping") {
  CHECK(xml_escape("<a href=\"x\">&'</a>") == "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;");
}

TEST_CASE("text: CSV fields are quoted when needed and never start a formula") {
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("two\nlines") == "\"two\nlines\"");
  CHECK(csv_field("=HYPERLINK(\"x\")") == "\"'=HYPERLINK(\"\"x\"\")\"");
  CHECK(csv_field("-3") == "'-3");
}

TEST_CASE("report: Gradescope results.json") {
  const GradeRun run = sample_run();
  const nlohmann::json r = gradescope_results(run.submissions[0], run);
  CHECK(r["score"] == 20);
  CHECK(r["max_score"] == 40);  // the skipped GPU lab is worth 0 of 0
  REQUIRE(r["tests"].size() == 5);
  CHECK(r["tests"][0]["status"] == "passed");
  CHECK(r["tests"][0]["score"] == 10);
  CHECK(r["tests"][1]["status"] == "failed");
  CHECK(r["tests"][1]["score"] == 0);
  CHECK(contains(r["tests"][1]["output"].get<std::string>(), "mismatch at [0]"));
  CHECK(contains(r["tests"][1]["output"].get<std::string>(), "bad byte ? and bell ?"));
  CHECK(r["tests"][3]["max_score"] == 0);
  CHECK_FALSE(r["tests"][3].contains("status"));
  CHECK(contains(r["tests"][3]["name"].get<std::string>(), "skipped"));
  for (const auto& t : r["tests"]) CHECK(t["visibility"] == "visible");
  REQUIRE(r["leaderboard"].size() == 2);
  CHECK(r["leaderboard"][0]["name"] == "lab07 speedup_vs_reference");
  CHECK(r["leaderboard"][0]["order"] == "desc");
  CHECK(r["leaderboard"][1]["order"] == "asc");
  CHECK(contains(r["output"].get<std::string>(), "COURSE_SEED=42"));
  CHECK_NOTHROW((void)r.dump());  // valid UTF-8 throughout
}

TEST_CASE("report: JUnit XML") {
  const std::string xml = junit_xml(sample_run());
  CHECK(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>", 0) == 0);
  CHECK(contains(xml, "name=\"conv &lt;small&gt; &amp; &quot;quoted&quot;\""));
  CHECK(contains(xml, "<failure message=\"x.cpp:3: CHECK(a == b) is 1 == 2\">"));
  // A crash is an error of the lab program as a whole, a skipped lab a skipped case.
  CHECK(contains(xml, "<error message=\"crashed with a segmentation fault (SIGSEGV)\">"));
  CHECK(contains(xml, "<skipped message=\"needs a CUDA GPU (no CUDA driver)\"/>"));
  CHECK(contains(xml, "bad byte ? and bell ?"));
  CHECK_FALSE(contains(xml, "\xff"));
  // Balanced suites.
  std::size_t open = 0, close = 0;
  for (std::size_t at = 0; (at = xml.find("<testsuite ", at)) != std::string::npos; ++at) ++open;
  for (std::size_t at = 0; (at = xml.find("</testsuite>", at)) != std::string::npos; ++at) ++close;
  CHECK(open == 6);
  CHECK(open == close);
}

TEST_CASE("report: gradebook CSV has one row per submission, a column per lab and per speed gate") {
  GradeRun run = sample_run();
  // The speed gate's interval travels as two more metrics.
  for (auto& lab : run.submissions[0].labs)
    if (lab_speedup(lab)) {
      lab.metrics.push_back({"speedup_ci_low", 1.7, ""});
      lab.metrics.push_back({"speedup_ci_high", 1.9, ""});
    }
  const std::string csv = gradebook_csv(run);
  CHECK(csv ==
        "submission,lab01_conv2d,lab02_padding_stride,lab03_pooling_activations,lab06_cuda_naive,lab07_cuda_optimized,"
        "lab07_cuda_optimized speedup,gpu,total,max_total\n"
        "alice,10,0,0,skipped,10,1.80 [1.70-1.90],\"NVIDIA H100, =1+1\",20,40\n"
        "\"bob,=evil\",0,,,,,,,0,10\n");
  CHECK(format_speedup({1.8, 1.7, 1.9}) == "1.80x (95% CI 1.70-1.90x)");
}

TEST_CASE("handout: what stays out of a student handout") {
  CHECK(excluded_from_handout("solutions/lab01_conv2d/conv2d.cpp"));
  CHECK(excluded_from_handout("grader/planted/off_by_one/conv2d.cpp"));
  CHECK(excluded_from_handout("grader/hidden/lab01_conv2d.json"));
  CHECK(excluded_from_handout(".git/config"));
  CHECK_FALSE(excluded_from_handout("exercises/lab01_conv2d/conv2d.cpp"));
  CHECK_FALSE(excluded_from_handout("lectures/solutions_discussion.md"));
  CHECK_FALSE(excluded_from_handout("grader/labs/lab01_conv2d/lab01_forward_tests.cpp"));
}

}  // TEST_SUITE

#include <cstdio>

#include "report_terminal.hpp"

namespace {
std::string terminal_text(const GradeRun& run, bool colour) {
  std::FILE* file = std::tmpfile();
  TerminalReport report(file, colour, /*live=*/false);
  report.begin("Grading exercises/ (3 labs)", run, true);
  for (const auto& sub : run.submissions) {
    report.submission_started(sub, run.submissions.size() > 1);
    for (const auto& l : sub.labs) report.lab_finished(l);
  }
  report.finish(run);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  std::fclose(file);
  return text;
}
}  // namespace

TEST_SUITE("unit") {

TEST_CASE("report: the terminal report ends with the next step for a student") {
  GradeRun run;
  run.seed = 7;
  run.regrade_command = "./course grade";
  LabResult first = lab("lab01_conv2d", LabStatus::passed);
  LabResult second = lab("lab02_padding_stride", LabStatus::failed, "not implemented: lab02::tf_padding");
  second.failed_by_cases = true;
  second.hint = "write the missing function(s)";
  second.details = "test case \"tf same\": not implemented: lab02::tf_padding\n";
  second.student_files = {"/nowhere/exercises/lab02_padding_stride/tf_padding_layout.cpp"};
  LabResult third = lab("lab05_cudnn", LabStatus::skipped, "needs a CUDA GPU (no CUDA driver)");
  run.submissions.push_back(submission("exercises", "/nowhere/exercises", {first, second, third}));
  const std::string plain = terminal_text(run, false);
  CHECK(contains(plain, "seed 7 (replay with COURSE_SEED=7); no GPU here"));
  CHECK(contains(plain, "1 of 2 labs passed, 1 skipped (no GPU)"));
  CHECK(contains(plain, "Next: lab02_padding_stride: not implemented: lab02::tf_padding"));
  CHECK(contains(plain, "edit   /nowhere/exercises/lab02_padding_stride/tf_padding_layout.cpp"));
  CHECK(contains(plain, "then   ./course grade lab02"));
  CHECK_FALSE(contains(plain, "\033["));
  CHECK(contains(terminal_text(run, true), "\033[31mFAILED"));
}

TEST_CASE("report: the terminal report of a batch is a table") {
  const std::string text = terminal_text(sample_run(), false);
  CHECK(contains(text, "submission  lab01"));
  CHECK(contains(text, "alice"));
  CHECK(contains(text, "20/40"));
  CHECK_FALSE(contains(text, "Next:"));
}

}  // TEST_SUITE
