// The order in which one submission's labs run (grader/README.md, "The order of the runs"):
//
//   shared   in parallel, up to `jobs` test programs at once (at most `gpu_jobs` of them GPU labs'):
//            the CPU labs; each GPU lab's listings, its untimed test cases (cut into parts by
//            doctest's --first/--last) and, once those passed, its compute-sanitizer passes
//            (cut the same way). Every GPU program of this phase runs with COURSE_GPU_SHARED=1,
//            so a speed gate that finds itself here fails instead of timing.
//   timed    then, one at a time with nothing else running: each GPU lab's TIMED_TESTS (its
//            speed gates), in lab order; and, whole, any GPU lab that cannot be split (no
//            TIMED_TESTS in the manifest, a listing that does not split cleanly, no GPU).
//
// A lab's verdict is judge_parts() of its parts; its sanitizer notes count only when it passed,
// as when the passes ran after it. One submission at a time: the parts running at once are one
// student's, each in its own worker sandbox (its own uid and namespaces).
#pragma once

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
  /// `gpu_jobs` use the GPU; a lab's untimed cases and each sanitizer pass in at most `parts`
  /// programs.
  LabSchedule(const LabRunSettings& settings, std::size_t jobs, std::size_t gpu_jobs, std::size_t parts);
  ~LabSchedule();
  LabSchedule(const LabSchedule&) = delete;
  LabSchedule& operator=(const LabSchedule&) = delete;

  /// A lab whose verdict is known without running it (skipped, did not compile, built only).
  void add_result(LabResult result);
  /// A lab to run; `base` holds what is known already (its files, its build time). Its shared
  /// phase starts at once, while the caller goes on (e.g. builds the next lab).
  void add_run(const ManifestLab& lab, const std::string& program, LabResult base);
  /// The labs whose verdict is final, in the order they were added, up to the first that is not.
  std::vector<LabResult> take_finished();
  /// Waits for the shared phase, then runs the timed phase; `activity(lab, what)` is called on
  /// this thread while it waits. Afterwards every lab is final.
  void finish(const std::function<void(const std::string&, const std::string&)>& activity);
  /// After finish(): seconds from construction to the end of the shared phase (the builds
  /// included), and of the timed phase.
  double shared_seconds() const { return shared_seconds_; }
  double timed_seconds() const { return timed_seconds_; }

 private:
  struct Entry;
  struct Task {
    bool gpu = false;
    std::function<void()> run;
  };
  void submit_locked(Task task);
  void worker_loop();
  void list_and_split(Entry& e);
  void run_shared_part(Entry& e, std::size_t index);
  void shared_cases_done_locked(Entry& e);
  void list_sanitizer(Entry& e, std::size_t tool);
  void run_sanitizer_part(Entry& e, std::size_t tool, std::size_t index);
  void run_timed(Entry& e);
  void conclude(Entry& e);

  LabRunSettings settings_;
  std::size_t gpu_jobs_, parts_;
  std::deque<std::unique_ptr<Entry>> entries_;
  std::size_t taken_ = 0;
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  double shared_seconds_ = 0, timed_seconds_ = 0;

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
