#include "lab_schedule.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <stdexcept>

#include "verdict.hpp"

namespace course_grader {

std::size_t gpu_jobs_for(std::size_t gpu_memory_gib, std::size_t jobs) {
  return std::max<std::size_t>(1, std::min(jobs, gpu_memory_gib / 8));
}

struct LabSchedule::Entry {
  std::size_t position = 0;
  ManifestLab lab;
  std::string program;
  LabResult result;  // the verdict once `final`
  bool final = false;
  bool whole_alone = false;  // run whole in the timed phase (cannot be split, or no GPU)
  // Split GPU lab:
  JudgeContext context;
  SandboxRequest request;
  std::vector<std::string> listed, shared, timed;
  std::vector<LabResult> shared_parts;  // in the listing's order
  bool listed_ok = false;
  // Set when an untimed part failed: the lab's sanitizer passes will not count, so they stop.
  std::shared_ptr<std::atomic<bool>> stop_sanitizer = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::vector<LabResult>> sanitizer_passes;  // per tool, in the listing's order
  LabResult timed_part;
};

LabSchedule::LabSchedule(const LabRunSettings& settings, std::size_t jobs, std::size_t gpu_jobs, std::size_t parts,
                         std::size_t sanitizer_parts)
    : settings_(settings),
      gpu_jobs_(std::max<std::size_t>(1, gpu_jobs)),
      parts_(std::max<std::size_t>(1, parts)),
      sanitizer_parts_(std::max<std::size_t>(1, sanitizer_parts)) {
  for (std::size_t i = 0; i < std::max<std::size_t>(1, jobs); ++i) threads_.emplace_back([this] { worker_loop(); });
}

LabSchedule::~LabSchedule() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) t.join();
}

double LabSchedule::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - created_).count();
}

void LabSchedule::submit_locked(Task task) {
  queue_.push_back(std::move(task));
  work_.notify_one();
}

void LabSchedule::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    auto runnable = queue_.end();
    work_.wait(lock, [&] {
      runnable = std::find_if(queue_.begin(), queue_.end(),
                              [&](const Task& t) { return !t.gpu || gpu_running_ < gpu_jobs_; });
      return stopping_ || runnable != queue_.end();
    });
    if (runnable == queue_.end()) return;  // stopping, nothing left to start
    Task task = std::move(*runnable);
    queue_.erase(runnable);
    ++running_;
    gpu_running_ += task.gpu ? 1 : 0;
    lock.unlock();
    std::exception_ptr error;
    try {
      task.run();
    } catch (...) {
      error = std::current_exception();  // the grader's own failure (no pipe, no fork): finish() throws it
    }
    lock.lock();
    if (error && !error_) error_ = error;
    --running_;
    gpu_running_ -= task.gpu ? 1 : 0;
    work_.notify_all();
    idle_.notify_all();
  }
}

namespace {

// The slot for `position` in `entries` (grown as needed); a position is added once.
template <class Entry>
std::unique_ptr<Entry>& slot(std::vector<std::unique_ptr<Entry>>& entries, std::size_t position) {
  if (entries.size() <= position) entries.resize(position + 1);
  if (entries[position]) throw std::logic_error("LabSchedule: a lab position was added twice");
  return entries[position];
}

}  // namespace

void LabSchedule::add_result(std::size_t position, LabResult result) {
  auto e = std::make_unique<Entry>();
  e->position = position;
  e->result = std::move(result);
  e->final = true;
  std::lock_guard<std::mutex> lock(mutex_);
  slot(entries_, position) = std::move(e);
}

void LabSchedule::add_run(std::size_t position, const ManifestLab& lab, const std::string& program, LabResult base) {
  auto owned = std::make_unique<Entry>();
  Entry& e = *owned;
  e.position = position;
  e.lab = lab;
  e.program = program;
  e.result = std::move(base);
  e.context = lab_context(lab, settings_);
  e.request = lab_request(lab, settings_);
  std::lock_guard<std::mutex> lock(mutex_);
  slot(entries_, position) = std::move(owned);
  if (lab.device != "gpu") {
    // A CPU lab does not touch the GPU: whole, in the shared phase.
    submit_locked({false, [this, &e] { run_whole(e, "whole"); }});
  } else if (!settings_.has_gpu || lab.timed_tests.empty()) {
    // Without a GPU it is skipped (alone, in case the program finds one after all); without
    // TIMED_TESTS nobody said which of its cases time the GPU: the whole program runs alone.
    e.whole_alone = true;
  } else {
    submit_locked({false, [this, &e] { list_and_split(e); }});
  }
}

// A lab's program run whole (a CPU lab in the shared phase; in the timed phase, a GPU lab that
// cannot be split): its verdict keeps what was known before it ran (its files, its build time).
void LabSchedule::run_whole(Entry& e, const std::string& what) {
  const double start = now();
  LabResult ran = run_lab(e.lab, e.program, settings_);
  std::lock_guard<std::mutex> lock(mutex_);
  spans_.push_back({e.lab.name, what, start, now()});
  ran.student_files = e.result.student_files;
  ran.build_seconds = e.result.build_seconds;
  e.result = std::move(ran);
  e.final = true;
}

SandboxResult LabSchedule::run_traced(const Entry& e, const std::string& what, const SandboxRequest& request) {
  const double start = now();
  SandboxResult result = run_sandboxed(request);
  std::lock_guard<std::mutex> lock(mutex_);
  spans_.push_back({e.lab.name, what, start, now()});
  return result;
}

std::vector<LabSchedule::Span> LabSchedule::spans() {
  std::lock_guard<std::mutex> lock(mutex_);
  return spans_;
}

// The lab's three listings -- all its cases, the untimed ones, the timed ones -- in parallel with
// other labs (a listing runs no test). The untimed and the timed must split the whole exactly;
// otherwise the lab runs whole, alone. Then its untimed parts are queued, and, without waiting
// for them, its sanitizer passes' listings: a long pass (lab 08's racecheck) no longer starts
// only after the lab's cases, and its parts queue behind this lab's, ahead of later labs'.
void LabSchedule::list_and_split(Entry& e) {
  SandboxRequest request = e.request;
  request.argv = {e.program, "--list-test-cases"};
  const SandboxResult all = run_traced(e, "listing", request);
  request.argv = {e.program, "--list-test-cases", "-tce=" + e.lab.timed_tests};
  const SandboxResult untimed = run_traced(e, "listing untimed", request);
  request.argv = {e.program, "--list-test-cases", "-tc=" + e.lab.timed_tests};
  const SandboxResult timed = run_traced(e, "listing timed", request);

  LabResult verdict = e.result;
  std::vector<std::string> listed, shared, timed_names;
  if (!judge_listing(e.context, all, verdict, listed)) {
    verdict.seconds = all.seconds;
    std::lock_guard<std::mutex> lock(mutex_);
    e.result = std::move(verdict);
    e.final = true;
    return;
  }
  LabResult scratch;
  bool split = judge_listing(e.context, untimed, scratch, shared, true) &&
               judge_listing(e.context, timed, scratch, timed_names, true);
  if (split) {
    std::vector<std::string> both = shared, whole = listed;
    both.insert(both.end(), timed_names.begin(), timed_names.end());
    std::sort(both.begin(), both.end());
    std::sort(whole.begin(), whole.end());
    split = both == whole;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!split) {
    e.whole_alone = true;
    return;
  }
  e.listed = std::move(listed);
  e.shared = std::move(shared);
  e.timed = std::move(timed_names);
  e.listed_ok = true;
  e.shared_parts.resize(shard_ranges(e.shared.size(), parts_).size());
  for (std::size_t i = 0; i < e.shared_parts.size(); ++i)
    submit_locked({true, [this, &e, i] { run_cases_part(e, i); }});
  e.sanitizer_passes.resize(e.lab.sanitize_tools.size());
  for (std::size_t t = 0; t < e.lab.sanitize_tools.size(); ++t)
    submit_locked({false, [this, &e, t] { list_sanitizer(e, t); }});
}

// One program of a split lab: `request`'s program on the cases `range` of `names` (the doctest
// filter, if any, already in its argv), in the shared phase; judged against that range.
LabResult LabSchedule::run_part(const Entry& e, const std::string& what, SandboxRequest request, JudgeContext context,
                                const std::vector<std::string>& names, std::pair<std::size_t, std::size_t> range) {
  request.set_env.emplace_back("COURSE_GPU_SHARED", "1");
  for (const std::string& a : range_arguments(range)) request.argv.push_back(a);
  context.limits = request.limits;
  const std::vector<std::string> expected(names.begin() + static_cast<std::ptrdiff_t>(range.first),
                                          names.begin() + static_cast<std::ptrdiff_t>(range.second));
  LabResult part;
  part.lab = e.lab.name;
  part.device = e.lab.device;
  judge_run(context, expected, run_traced(e, what + " " + std::to_string(range.first + 1) + "-" +
                                              std::to_string(range.second), request),
            part);
  return part;
}

void LabSchedule::run_cases_part(Entry& e, std::size_t index) {
  SandboxRequest request = e.request;
  request.argv = {e.program, "-tce=" + e.lab.timed_tests};
  LabResult part =
      run_part(e, "cases", std::move(request), e.context, e.shared, shard_ranges(e.shared.size(), parts_)[index]);
  // The lab failed: its sanitizer passes will not count (conclude), so they need not run.
  if (part.status != LabStatus::passed) e.stop_sanitizer->store(true);
  std::lock_guard<std::mutex> lock(mutex_);
  e.shared_parts[index] = std::move(part);
}

// A sanitizer pass's listing (its SANITIZE_TESTS), then its parts. A part queued when the lab's
// untimed cases have failed does not start; one running is killed (SandboxRequest::cancel).
void LabSchedule::list_sanitizer(Entry& e, std::size_t tool) {
  if (e.stop_sanitizer->load()) return;
  SandboxRequest request = sanitizer_request(e.request, e.lab.sanitize_tools[tool]);
  request.cancel = e.stop_sanitizer;
  JudgeContext slow = e.context;
  slow.limits = request.limits;
  SandboxRequest listing = request;
  listing.set_env.emplace_back("COURSE_GPU_SHARED", "1");
  listing.argv = {e.program, "--list-test-cases"};
  LabResult pass;
  pass.lab = e.lab.name;
  pass.device = e.lab.device;
  std::vector<std::string> listed;
  const bool ok = judge_listing(slow, run_traced(e, e.lab.sanitize_tools[tool] + " listing", listing), pass, listed);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ok) {
    e.sanitizer_passes[tool] = {std::move(pass)};  // the gate reports the listing's failure
    return;
  }
  const auto ranges = shard_ranges(listed.size(), sanitizer_parts_);
  e.sanitizer_passes[tool].resize(ranges.size());
  auto names = std::make_shared<const std::vector<std::string>>(std::move(listed));
  request.argv = {e.program};
  for (std::size_t i = 0; i < ranges.size(); ++i)
    submit_locked({true, [this, &e, tool, i, names, request, range = ranges[i]] {
                     if (e.stop_sanitizer->load()) return;
                     LabResult part = run_part(e, e.lab.sanitize_tools[tool], request, e.context, *names, range);
                     std::lock_guard<std::mutex> done(mutex_);
                     e.sanitizer_passes[tool][i] = std::move(part);
                   }});
}

// The lab's timed cases: nothing else of this grader runs meanwhile (the caller waited for the
// shared phase), and no COURSE_GPU_SHARED.
void LabSchedule::run_timed(Entry& e) {
  if (e.timed.empty()) return;
  SandboxRequest request = e.request;
  request.argv = {e.program, "-tc=" + e.lab.timed_tests};
  e.timed_part.lab = e.lab.name;
  e.timed_part.device = e.lab.device;
  judge_run(e.context, e.timed, run_traced(e, "timed", request), e.timed_part);
}

void LabSchedule::conclude(Entry& e) {
  std::vector<LabResult> parts = e.shared_parts;
  if (!e.timed.empty()) parts.push_back(e.timed_part);
  LabResult verdict = e.result;
  judge_parts(e.context, e.listed, parts, verdict);
  // Only a lab that passed gets its sanitizer verdicts; its untimed parts all passed then, so
  // none of its sanitizer parts was stopped and every one has its verdict.
  if (verdict.status == LabStatus::passed)
    for (std::size_t t = 0; t < e.lab.sanitize_tools.size() && t < e.sanitizer_passes.size(); ++t) {
      if (e.sanitizer_passes[t].empty() || e.stop_sanitizer->load()) {
        verdict.status = LabStatus::failed;
        verdict.reason = "compute-sanitizer " + e.lab.sanitize_tools[t] + ": the pass did not run (a grader error)";
        break;
      }
      apply_sanitizer(e.lab.sanitize_tools[t], e.sanitizer_passes[t], verdict);
    }
  e.result = std::move(verdict);
  e.final = true;
}

std::vector<LabResult> LabSchedule::take_finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<LabResult> out;
  while (taken_ < entries_.size() && entries_[taken_] && entries_[taken_]->final)
    out.push_back(entries_[taken_++]->result);
  return out;
}

void LabSchedule::finish(const std::function<void(const std::string&, const std::string&)>& activity) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (queue_.empty() && running_ == 0) break;
      std::string first;
      for (const auto& e : entries_)
        if (e && !e->final && first.empty()) first = e->lab.name;
      const std::size_t busy = running_;
      lock.unlock();
      activity(first, "running " + std::to_string(busy) + " test program" + (busy == 1 ? "" : "s") + " at once");
      lock.lock();
      idle_.wait_for(lock, std::chrono::milliseconds(250));
    }
    if (error_) std::rethrow_exception(error_);
  }
  const auto shared_end = std::chrono::steady_clock::now();
  shared_seconds_ = std::chrono::duration<double>(shared_end - created_).count();
  // The timed phase: this thread alone; the workers have nothing queued and nothing running.
  for (auto& owned : entries_) {
    if (!owned || owned->final) continue;
    Entry& e = *owned;
    if (e.whole_alone) {
      activity(e.lab.name, "running (alone on the machine)");
      run_whole(e, "whole, alone");
    } else if (e.listed_ok) {
      if (!e.timed.empty()) activity(e.lab.name, "timing (alone on the machine)");
      run_timed(e);
      conclude(e);
    }
  }
  timed_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - shared_end).count();
}

}  // namespace course_grader
