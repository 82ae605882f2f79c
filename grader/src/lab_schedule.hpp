// The order in which one submission's labs run (grader/README.md, "The order of the runs"):
//
//   shared   in parallel, up to `jobs` test programs at once (at most `gpu_jobs` of them GPU labs'):
//            the CPU labs; each GPU lab's listings, its untimed test cases (cut into parts by
//            doctest's --first/--last) and, started with them, its compute-sanitizer passes (cut
//            the same way, finer). Every GPU program of this phase runs with COURSE_GPU_SHARED=1,
//            so a speed gate that finds itself here fails instead of timing. The caller adds the
//            longest labs first (grade_command.cpp); what is queued starts in the order it came.
//   timed    then, one at a time with nothing else running: each GPU lab's TIMED_TESTS (its
//            speed gates), in lab order; and, whole, any GPU lab that cannot be split (no
//            TIMED_TESTS in the manifest, a listing that does not split cleanly, no GPU).
//
// A lab's verdict is judge_parts() of its parts; its sanitizer passes count only when it passed,
// as when they ran after it: the first untimed part that fails stops the lab's sanitizer parts
// (those running are killed, those queued never start). One submission at a time: the parts
// running at once are one student's, each in its own worker sandbox (its own uid and namespaces).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lab_runner.hpp"
#include "manifest.hpp"
#include "results.hpp"

namespace course_grader {

class LabSchedule {
 public:
  /// `jobs` test programs at once (1: one at a time, in the same phase order); of them at most
  /// `gpu_jobs` use the GPU; a lab's untimed cases in at most `parts` programs, each of its
  /// sanitizer passes in at most `sanitizer_parts`.
  LabSchedule(const LabRunSettings& settings, std::size_t jobs, std::size_t gpu_jobs, std::size_t parts,
              std::size_t sanitizer_parts);
  ~LabSchedule();
  LabSchedule(const LabSchedule&) = delete;
  LabSchedule& operator=(const LabSchedule&) = delete;

  /// Labs may be added in any order; `position` is the lab's place in the reports (0, 1, 2...,
  /// each once) and in the timed phase.
  /// A lab whose verdict is known without running it (skipped, did not compile, built only).
  void add_result(std::size_t position, LabResult result);
  /// A lab to run; `base` holds what is known already (its files, its build time). Its shared
  /// phase starts at once, while the caller goes on (e.g. builds the next lab).
  void add_run(std::size_t position, const ManifestLab& lab, const std::string& program, LabResult base);
  /// The labs whose verdict is final, by position, from the first not taken yet up to the first
  /// that is not final (or not added yet).
  std::vector<LabResult> take_finished();
  /// Waits for the shared phase, then runs the timed phase; `activity(lab, what)` is called on
  /// this thread while it waits. Afterwards every lab is final.
  void finish(const std::function<void(const std::string&, const std::string&)>& activity);
  /// After finish(): seconds from construction to the end of the shared phase (the builds
  /// included), and of the timed phase.
  double shared_seconds() const { return shared_seconds_; }
  double timed_seconds() const { return timed_seconds_; }

  /// One program the schedule ran: its lab, what it ran ("cases 1-18", "racecheck 3-4",
  /// "timed", ...), and when, in seconds from construction (COURSE_GRADE_TIMING prints them).
  struct Span {
    std::string lab, what;
    double start = 0, end = 0;
  };
  std::vector<Span> spans();
  /// Seconds since construction: the clock of the spans (the caller times its builds with it too).
  double now() const;

 private:
  struct Entry;
  struct Task {
    bool gpu = false;
    std::function<void()> run;
  };
  void submit_locked(Task task);
  void worker_loop();
  void run_whole(Entry& e, const std::string& what);
  SandboxResult run_traced(const Entry& e, const std::string& what, const SandboxRequest& request);
  LabResult run_part(const Entry& e, const std::string& what, SandboxRequest request, JudgeContext context,
                     const std::vector<std::string>& names, std::pair<std::size_t, std::size_t> range);
  void list_and_split(Entry& e);
  void run_cases_part(Entry& e, std::size_t index);
  void list_sanitizer(Entry& e, std::size_t tool);
  void run_timed(Entry& e);
  void conclude(Entry& e);

  LabRunSettings settings_;
  std::size_t gpu_jobs_, parts_, sanitizer_parts_;
  std::vector<std::unique_ptr<Entry>> entries_;  // by position; null until added
  std::size_t taken_ = 0;
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  double shared_seconds_ = 0, timed_seconds_ = 0;
  std::vector<Span> spans_;

  std::mutex mutex_;
  std::condition_variable work_, idle_;
  std::deque<Task> queue_;
  std::size_t running_ = 0, gpu_running_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

/// How many test programs may use the GPU at once: one per 8 GiB of its memory (a laptop's
/// 4-8 GiB GPU runs them one at a time), at least one, at most `jobs`.
std::size_t gpu_jobs_for(std::size_t gpu_memory_gib, std::size_t jobs);

}  // namespace course_grader
