#include "cli.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace course_grader {

namespace {

// Defaults: the tree this grader was built from (set by grader/CMakeLists.txt).
const char* const kDefaultSourceDir = COURSE_GRADER_SOURCE_DIR;
const char* const kDefaultBuildDir = COURSE_GRADER_BUILD_DIR;

// Limits of the numeric options: generous for any real use, and small enough that nothing
// downstream overflows (memory is shifted into bytes for setrlimit, points are summed per lab).
constexpr double kMaxTimeoutS = 7 * 24 * 3600.0;    // a week
constexpr long long kMaxMemoryMb = 1LL << 22;       // 4 TiB
constexpr long long kMaxJobs = 1024;
constexpr long long kMaxPoints = 1000000;

// A number of seconds: the whole text is a plain decimal ("90", "2.5"; no sign, exponent, hex,
// "inf" or blanks) in (0, max].
double positive_seconds(const std::string& option, const std::string& text, double max) {
  const auto digits = std::count_if(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const auto points = std::count(text.begin(), text.end(), '.');
  const bool plain_decimal = digits > 0 && points <= 1 && static_cast<std::size_t>(digits + points) == text.size();
  const double value = plain_decimal ? std::strtod(text.c_str(), nullptr) : 0.0;
  if (!plain_decimal || !(value > 0) || value > max)
    throw UsageError(option + " needs a positive number of seconds up to " + std::to_string(static_cast<long long>(max)) +
                     ", not '" + text + "'");
  return value;
}

// A whole number: the whole text is decimal digits (no sign, exponent or blanks) in [1, max].
long long whole_number(const std::string& option, const std::string& text, long long max) {
  const std::string wanted = option + " needs a whole number from 1 to " + std::to_string(max);
  long long value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const bool all_digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const auto [stop, error] = std::from_chars(first, last, value);
  if (!all_digits || error != std::errc() || stop != last || value < 1 || value > max)
    throw UsageError(wanted + ", not '" + text + "'");
  return value;
}

class Args {
 public:
  explicit Args(const std::vector<std::string>& args) : args_(args) {}
  bool done() const { return i_ >= args_.size(); }
  const std::string& next() { return args_[i_++]; }
  // The value of an option given as "--opt VALUE" or "--opt=VALUE".
  std::string value_of(const std::string& option, const std::string& inline_value, bool has_inline) {
    if (has_inline) return inline_value;
    if (done()) throw UsageError(option + " needs a value");
    return next();
  }

 private:
  const std::vector<std::string>& args_;
  std::size_t i_ = 0;
};

void set_mode(GradeOptions& g, Mode mode, bool& mode_given, const std::string& option) {
  if (mode_given) throw UsageError(option + ": choose only one of --solutions, --submission and --submissions");
  g.mode = mode;
  mode_given = true;
}

GradeOptions parse_grade(Args& args) {
  GradeOptions g;
  g.source_dir = kDefaultSourceDir;
  bool mode_given = false, build_dir_given = false;
  while (!args.done()) {
    const std::string arg = args.next();
    if (arg.size() < 2 || arg[0] != '-') {
      g.labs.push_back(arg);
      continue;
    }
    const std::size_t eq = arg.find('=');
    const std::string option = arg.substr(0, eq);
    const bool has_inline = eq != std::string::npos;
    const std::string inline_value = has_inline ? arg.substr(eq + 1) : "";
    auto value = [&] { return args.value_of(option, inline_value, has_inline); };
    if (option == "--solutions") {
      set_mode(g, Mode::solutions, mode_given, option);
    } else if (option == "--exercises") {
      set_mode(g, Mode::exercises, mode_given, option);
    } else if (option == "--submission") {
      set_mode(g, Mode::submission, mode_given, option);
      g.submission_path = value();
    } else if (option == "--submissions") {
      set_mode(g, Mode::submissions, mode_given, option);
      g.submission_path = value();
    } else if (option == "--hidden") {
      g.hidden_dir = value();
    } else if (option == "--allow-degraded") {
      g.allow_degraded = true;
    } else if (option == "--json") {
      g.json_path = value();
    } else if (option == "--junit") {
      g.junit_path = value();
    } else if (option == "--csv") {
      g.csv_path = value();
    } else if (option == "--results") {
      g.results_path = value();
    } else if (option == "--only") {
      const std::string names = value();
      std::size_t start = 0;
      for (std::size_t comma; start <= names.size(); start = comma + 1) {
        comma = names.find(',', start);
        if (comma == std::string::npos) comma = names.size();
        if (comma > start) g.only.push_back(names.substr(start, comma - start));
      }
      if (g.only.empty()) throw UsageError("--only needs submission names (NAME,NAME,...)");
    } else if (option == "--gpu-elsewhere") {
      g.gpu_elsewhere = value();
      if (g.gpu_elsewhere.empty()) throw UsageError("--gpu-elsewhere needs a text (e.g. \"graded on the cluster\")");
    } else if (option == "--timeout") {
      g.timeout_s = positive_seconds(option, value(), kMaxTimeoutS);
    } else if (option == "--memory-mb") {
      g.memory_mb = static_cast<std::size_t>(whole_number(option, value(), kMaxMemoryMb));
    } else if (option == "--source-dir") {
      g.source_dir = value();
    } else if (option == "--build-dir") {
      g.build_dir = value();
      build_dir_given = true;
    } else if (option == "--manifest") {
      g.manifest_path = value();
    } else if (option == "--jobs" || option == "-j") {
      g.jobs = static_cast<int>(whole_number(option, value(), kMaxJobs));
    } else if (option == "--test-jobs") {
      g.test_jobs = static_cast<int>(whole_number(option, value(), kMaxJobs));
    } else if (option == "--points") {
      g.points = static_cast<int>(whole_number(option, value(), kMaxPoints));
    } else if (option == "--no-build") {
      g.no_build = true;
    } else if (option == "--build-only") {
      g.build_only = true;
    } else if (option == "--compile-gpu-labs") {
      g.compile_gpu_labs = true;
    } else {
      throw UsageError("unknown option '" + arg + "' for grade");
    }
  }
  if (g.source_dir.empty()) throw UsageError("--source-dir is empty");
  if (!build_dir_given) g.build_dir = g.source_dir == kDefaultSourceDir ? kDefaultBuildDir : g.source_dir + "/build";
  if (g.no_build && g.build_only) throw UsageError("--no-build and --build-only contradict each other");
  if (g.submission_path.empty() && (g.mode == Mode::submission || g.mode == Mode::submissions))
    throw UsageError("--submission/--submissions needs a folder");
  if (!g.only.empty() && g.mode != Mode::submissions) throw UsageError("--only selects submissions of a --submissions batch");
  return g;
}

MergeOptions parse_merge(Args& args) {
  MergeOptions m;
  while (!args.done()) {
    const std::string arg = args.next();
    if (arg.size() < 2 || arg[0] != '-') {
      m.inputs.push_back(arg);
      continue;
    }
    const std::size_t eq = arg.find('=');
    const std::string option = arg.substr(0, eq);
    const bool has_inline = eq != std::string::npos;
    const std::string value = args.value_of(option, has_inline ? arg.substr(eq + 1) : "", has_inline);
    if (option == "--results") m.results_path = value;
    else if (option == "--json") m.json_path = value;
    else if (option == "--junit") m.junit_path = value;
    else if (option == "--csv") m.csv_path = value;
    else if (option == "--expect") m.expect_path = value;
    else throw UsageError("unknown option '" + arg + "' for merge");
  }
  if (m.inputs.empty() && m.expect_path.empty()) throw UsageError("merge needs results files (course_grader grade --results FILE)");
  if (m.results_path.empty() && m.json_path.empty() && m.junit_path.empty() && m.csv_path.empty())
    throw UsageError("merge writes nothing without --results, --csv, --junit or --json");
  return m;
}

HandoutOptions parse_handout(Args& args) {
  HandoutOptions h;
  h.source_dir = kDefaultSourceDir;
  while (!args.done()) {
    const std::string arg = args.next();
    if (arg == "--source-dir") {
      h.source_dir = args.value_of(arg, "", false);
    } else if (arg.rfind("--source-dir=", 0) == 0) {
      h.source_dir = arg.substr(13);
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError("unknown option '" + arg + "' for handout");
    } else if (h.destination.empty()) {
      h.destination = arg;
    } else {
      throw UsageError("handout takes one destination folder, got also '" + arg + "'");
    }
  }
  if (h.destination.empty()) throw UsageError("handout needs a destination folder: course_grader handout DEST");
  return h;
}

}  // namespace

Command parse_command_line(const std::vector<std::string>& argv) {
  Command command;
  if (argv.empty()) return command;  // help
  const std::string& first = argv[0];
  if (first == "--help" || first == "-h" || first == "help") return command;
  Args args(argv);
  args.next();
  for (const auto& a : argv)
    if (a == "--help" || a == "-h") return command;
  if (first == "grade") {
    command.kind = Command::Kind::grade;
    command.grade = parse_grade(args);
  } else if (first == "handout") {
    command.kind = Command::Kind::handout;
    command.handout = parse_handout(args);
  } else if (first == "merge") {
    command.kind = Command::Kind::merge;
    command.merge = parse_merge(args);
  } else {
    throw UsageError("unknown command '" + first + "' (commands: grade, handout, merge)");
  }
  return command;
}

std::string help_text() {
  return R"(course_grader: builds and grades the labs of the CNN-on-GPU course.

USAGE
  course_grader grade [WHAT] [OPTIONS] [LAB ...]
  course_grader handout DEST [--source-dir DIR]
  course_grader merge [REPORTS] [--expect FILE] RESULTS...
  course_grader --help

  (Students normally run it through ./course: `./course grade lab01`.)

GRADE
  Builds each lab's test program (one lab at a time, so a compile error fails only that lab),
  runs it in an isolated child process and reports per lab: passed, failed (and why), or
  skipped (GPU labs on a machine without a GPU). LAB may be written lab01, 1 or lab01_conv2d;
  without LAB every lab is graded.

  WHAT (default: the course's exercises/ folder)
    --solutions           grade solutions/ (all must pass)
    --submission DIR      grade DIR, a copy of exercises/ (a folder with labNN_*/ inside; a
                          folder holding exercises/ works too). Built in its own build folder
                          <build-dir>/submissions/<name>
    --submissions DIR     grade every sub-folder of DIR as one submission (name = folder name,
                          reduced to [A-Za-z0-9_]); all share one build folder, each lab of each
                          submission is built separately. Writes a gradebook with --csv

  REPORTS (the terminal report is always printed; colour only on a terminal, NO_COLOR=1 turns
  it off)
    --json FILE           Gradescope results.json (for --submissions: one object per submission)
    --junit FILE          JUnit XML (CI systems)
    --csv FILE            gradebook CSV: one row per submission, one column per lab, total
    --points N            points per lab in results.json and the gradebook (default 10)
    --results FILE        the complete record of the run (course-results/1 JSON: every field of
                          every lab, where it ran: host, GPU, Slurm job), for `merge` and the
                          instructor report (grader/report/instructor_report.py)

  LIMITS (per lab program run)
    --timeout S           wall-clock limit in seconds (default 60)
    --memory-mb M         memory limit in MiB (default 2048): address-space limit for CPU labs,
                          resident-memory watch for GPU labs

  BATCHES (see grader/slurm/README.md for a class on a Slurm cluster)
    --only NAME,...       with --submissions: grade only these submissions (names as printed);
                          the build folder stays the whole batch's, and each student's seed
                          depends only on the run seed and the name, so re-grading one student
                          never changes another's result
    --build-only          build the lab programs, do not run them; in a batch every student's
                          labs are first built in one parallel build, and a lab that does not
                          compile is recorded so that a later --no-build run reports it
    --no-build            run the lab programs as they are (no cmake)
    --gpu-elsewhere TEXT  do not run GPU labs here: report them skipped, as TEXT (e.g. "graded
                          on the cluster" on Gradescope, which has no GPU); never passed
    --compile-gpu-labs    on a machine without a GPU, compile the GPU labs too (to see that
                          they compile; they are still reported skipped). Without it they are
                          reported skipped without compiling them (minutes of nvcc for nothing
                          to run); --build-only always compiles them

  OTHER
    --hidden DIR          instructor's hidden test cases: DIR/<lab>.json, passed to the lab
                          programs as COURSE_HIDDEN_DIR. Refused when student code would run
                          without isolation (sandbox mode "none": no namespaces and not root,
                          so it runs as your user and could read DIR) unless --allow-degraded
    --allow-degraded      grade --hidden even in sandbox mode "none", knowingly; every report
                          then says DEGRADED
    --source-dir DIR      the course repository (default: the one this grader was built from)
    --build-dir DIR       its build folder (default: the one this grader was built in, or
                          <source-dir>/build)
    --jobs N, -j N        parallel compile jobs (default: number of cores)
    --test-jobs N         test programs run at once (default: number of cores, at most 16);
                          speed gates always run alone, after the rest
    --manifest FILE       read this lab manifest instead of <build-dir>/labs/manifest.json

  The random seed of the run is printed; COURSE_SEED=<seed> replays it. With --submissions
  each submission gets its own seed, FNV-1a-64("<run seed>:<name>") mod 1,000,000,000, printed
  with it: COURSE_SEED=<run seed> replays the whole batch, COURSE_SEED=<its seed> with
  --submission replays that one submission.

  EXIT CODE  0 every graded lab passed (skipped GPU labs do not count), 1 a lab failed,
             2 usage error or the grader itself could not run.

MERGE
  Reads the --results records of several grade runs (a Slurm job array's tasks, one student or a
  few each) and writes one set of reports for all of them: --results FILE (the merged record),
  --csv FILE (gradebook), --junit FILE, --json FILE (Gradescope-style, one object per student).
  The records must share one run seed; a student in two records is an error (naming both).
  --expect FILE (one name per line): a student listed there without results is reported
  NOT GRADED (re-submit that task), never as a 0.

HANDOUT
  Copies the course to DEST (which must not exist or be empty) without solutions/, the planted
  faults (grader/planted/) and any folder named hidden/, so it can be given to students. The
  copy configures, builds and grades its exercises/ as it is.
)";
}

}  // namespace course_grader
