#include "verdict.hpp"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <sstream>

#include "text_util.hpp"

namespace course_grader {

const char* to_string(LabStatus status) {
  switch (status) {
    case LabStatus::passed: return "passed";
    case LabStatus::failed: return "failed";
    case LabStatus::skipped: return "skipped";
  }
  return "?";
}

namespace {

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

std::string seconds_text(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

void fail(LabResult& out, const std::string& reason, const std::string& hint = "") {
  out.status = LabStatus::failed;
  out.reason = reason;
  if (!hint.empty()) out.hint = hint;
}

// The case that was running when the run ended, if any: one that started and did not finish, or
// the one doctest's crash handler reported (it closes the case before the process dies).
std::string case_in_progress(const std::vector<nlohmann::json>& records) {
  std::string current, crashed;
  for (const auto& r : records) {
    const std::string type = r.value("type", "");
    if (type == "start") current = r.value("case", "");
    if (type == "case") current.clear();
    if (type == "crash") crashed = r.value("case", "");
  }
  return current.empty() ? crashed : current;
}

std::string in_case(const std::vector<nlohmann::json>& records) {
  const std::string name = case_in_progress(records);
  return name.empty() ? "" : " in test case " + quoted(name);
}

bool mentions(const std::string& text, const char* needle) { return text.find(needle) != std::string::npos; }

std::string memory_reason(const JudgeContext& c) {
  return "exceeded the memory limit of " + std::to_string(c.limits.memory_mb) + " MiB";
}
const char* kMemoryHint =
    "allocate only what the computation needs; a size computed from the wrong dimensions (or a negative "
    "value converted to an unsigned size) asks for an enormous amount";

// Checks how the process ended. Returns true if something went wrong (and sets the verdict).
bool judge_ending(const JudgeContext& c, const SandboxResult& r, LabResult& out) {
  const std::string where = in_case(r.records);
  switch (r.ending) {
    case Ending::not_started:
      fail(out, "the lab program could not be started: " + r.start_error, "rebuild it (the build may have failed)");
      return true;
    case Ending::timed_out:
      fail(out, "timed out after " + seconds_text(c.limits.timeout_s) + " s" + where,
           "look for an endless loop (a condition that never becomes false, an index that is never advanced) "
           "or for code that is far slower than it needs to be");
      return true;
    case Ending::memory_exceeded:
      fail(out, memory_reason(c) + where, kMemoryHint);
      return true;
    case Ending::cancelled:  // its verdict was no longer needed (lab_schedule.cpp); never reported
      fail(out, "stopped by the grader: its result was no longer needed" + where, "");
      return true;
    case Ending::signaled: break;
    case Ending::exited: return false;
  }
  const int sig = r.signal;
  const std::string name = signal_name(sig);
  if (sig == SIGABRT && mentions(r.output, "bad_alloc")) {
    fail(out, memory_reason(c) + " (an allocation failed and the program aborted)" + where, kMemoryHint);
  } else if (sig == SIGSEGV) {
    fail(out, "crashed with a segmentation fault (SIGSEGV)" + where,
         "the code read or wrote memory it does not own: an index past the end of a tensor, a negative index, or a "
         "null or dangling pointer. Check loop bounds and index formulas");
  } else if (sig == SIGABRT) {
    fail(out, "aborted (SIGABRT)" + where,
         "an assert() failed, an exception escaped where none may (a destructor, a noexcept function), or the C++ "
         "library detected memory corruption (often a write past the end of a buffer); see the output");
  } else if (sig == SIGFPE) {
    fail(out, "crashed with an arithmetic error (SIGFPE)" + where,
         "usually an integer division or remainder by zero, e.g. by a stride or size that is 0");
  } else if (sig == SIGBUS) {
    fail(out, "crashed with a bus error (SIGBUS)" + where, "a misaligned or invalid memory access");
  } else if (sig == SIGILL || sig == SIGTRAP) {
    fail(out, "stopped on an illegal instruction (" + name + ")" + where,
         "a function with a return type that ends without returning a value, or another kind of undefined behaviour");
  } else if (sig == SIGXFSZ) {
    fail(out, "wrote a file larger than the limit of " + std::to_string(c.limits.max_file_mb) + " MiB (SIGXFSZ)" + where,
         "the lab has no reason to write large files");
  } else if (sig == SIGKILL) {
    fail(out, "was killed (SIGKILL)" + where,
         "the system kills programs that use too much memory; check how much your code allocates");
  } else {
    fail(out, "was terminated by " + name + where);
  }
  return true;
}

// Channel-level checks shared by both runs. Returns true if something went wrong.
bool judge_channel(const JudgeContext& c, const SandboxResult& r, LabResult& out) {
  if (!r.channel_error.empty()) {
    fail(out, "the grader's result channel was tampered with: " + r.channel_error,
         "code under test must not write to file descriptors it did not open");
    return true;
  }
  if (r.records.empty() || r.records.front().value("type", "") != "hello") {
    fail(out, "the program ended (exit code " + std::to_string(r.exit_code) +
                  ") before the course's test runner started, so no test ran",
         "code that runs before main() -- the constructor of a global object -- must not end the program");
    return true;
  }
  const std::string reported = r.records.front().value("lab", "");
  if (reported != c.lab) {
    fail(out, "the program reports itself as " + quoted(reported) + ", not " + quoted(c.lab),
         "the build is mixed up: rebuild from a clean build folder");
    return true;
  }
  return false;
}

const nlohmann::json* find_record(const std::vector<nlohmann::json>& records, const char* type) {
  for (const auto& r : records)
    if (r.value("type", "") == type) return &r;
  return nullptr;
}

// A GPU lab without a GPU: skipped only when the runner said so through the channel, exited
// with 77, and the grader's own check agrees. Returns true if the record decided the verdict.
bool judge_skip(const JudgeContext& c, const SandboxResult& r, LabResult& out) {
  const nlohmann::json* skip = find_record(r.records, "skip");
  if (skip == nullptr) return false;
  const std::string why = skip->value("reason", "");
  if (c.device != "gpu") {
    fail(out, "a CPU lab asked to be skipped");
  } else if (r.exit_code != 77) {
    fail(out, "the runner asked to skip the lab but the program exited with code " + std::to_string(r.exit_code));
  } else if (c.grader_has_gpu) {
    fail(out, "the lab program found no usable GPU (" + why + ") although this machine has one",
         "check that the program's CUDA runtime matches the driver (see ./course info)");
  } else {
    out.status = LabStatus::skipped;
    out.reason = "needs a CUDA GPU (" + (why.empty() ? c.grader_gpu_reason : why) + ")";
    out.hint = "run it on a machine with an NVIDIA GPU";
  }
  return true;
}

std::vector<std::string> string_list(const nlohmann::json& value) {
  std::vector<std::string> out;
  if (value.is_array())
    for (const auto& v : value)
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

// The function a skeleton reported as missing ("not implemented: lab01::conv2d_forward"), from the
// escaped exception or from a check that threw it; empty if the case failed for another reason.
std::string missing_function(const CaseResult& k) {
  static const std::string prefix = "not implemented: ";
  std::vector<std::string> texts = k.messages;
  texts.insert(texts.begin(), k.exception);
  for (const auto& text : texts) {
    const std::size_t at = text.find(prefix);
    if (at == std::string::npos) continue;
    std::size_t end = at + prefix.size();
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' || text[end] == ':'))
      ++end;
    return text.substr(at + prefix.size(), end - at - prefix.size());
  }
  return "";
}

void summarize_failures(const JudgeContext& c, LabResult& out) {
  std::vector<const CaseResult*> failed;
  for (const auto& k : out.cases)
    if (!k.passed) failed.push_back(&k);
  if (failed.empty()) {
    out.status = LabStatus::passed;
    return;
  }
  // Details: the first few failing cases with their first message.
  std::ostringstream details;
  for (std::size_t i = 0; i < failed.size() && i < 3; ++i) {
    details << "test case " << quoted(failed[i]->name) << ":\n";
    if (!failed[i]->exception.empty()) details << "  " << failed[i]->exception << "\n";
    for (std::size_t m = 0; m < failed[i]->messages.size() && m < 2; ++m) details << "  " << failed[i]->messages[m] << "\n";
  }
  if (failed.size() > 3) details << "(and " << failed.size() - 3 << " more failing test cases)\n";
  out.details = details.str();

  std::vector<std::string> missing;
  bool only_missing = true, bad_alloc = false;
  for (const auto* k : failed) {
    const std::string function = missing_function(*k);
    if (!function.empty()) {
      if (std::find(missing.begin(), missing.end(), function) == missing.end()) missing.push_back(function);
    } else {
      only_missing = false;
    }
    bad_alloc = bad_alloc || mentions(k->exception, "bad_alloc");
    for (const auto& m : k->messages) bad_alloc = bad_alloc || mentions(m, "bad_alloc");
  }
  out.failed_by_cases = true;
  const std::string counts = std::to_string(failed.size()) + " of " + std::to_string(out.cases.size()) + " test cases failed";
  if (only_missing) {
    // Every failure says the same thing: one example is enough.
    out.details = "test case " + quoted(failed.front()->name) + ": not implemented: " + missing.front() + "\n";
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    fail(out, "not implemented: " + names, "write the missing function(s); the lab README says what each must do");
  } else if (bad_alloc) {
    fail(out, counts + ": an allocation failed (std::bad_alloc), " + memory_reason(c), kMemoryHint);
  } else {
    const CaseResult& first = *failed.front();
    std::string what = !first.exception.empty() ? first.exception : first.messages.empty() ? "" : first.messages.front();
    what = what.substr(0, what.find('\n'));
    // "/long/path/grader/labs/x_tests.cpp:42: CHECK(...)" -> "x_tests.cpp:42: CHECK(...)"
    const std::size_t colon = what.find(':');
    const std::size_t slash = what.rfind('/', colon);
    if (!what.empty() && what[0] == '/' && colon != std::string::npos && slash != std::string::npos)
      what = what.substr(slash + 1);
    fail(out, counts + "; first: " + quoted(first.name) + (what.empty() ? "" : " -- " + what));
  }
}

void add_cuda_hint(const SandboxResult& r, LabResult& out) {
  std::string text = r.output + out.details;
  if (mentions(text, "illegal memory access") || mentions(text, "cudaErrorIllegalAddress") ||
      mentions(text, "misaligned address"))
    out.hint = "a CUDA kernel accessed memory outside its buffers (often a missing bounds check for threads past "
               "the end of the data); run the lab program under compute-sanitizer to find the kernel and line";
}

}  // namespace

bool judge_listing(const JudgeContext& c, const SandboxResult& r, LabResult& out, std::vector<std::string>& listed,
                   bool allow_empty) {
  listed.clear();
  if (judge_ending(c, r, out) || judge_channel(c, r, out) || judge_skip(c, r, out)) {
    if (out.status == LabStatus::failed) out.reason += " (while listing its test cases, before any test ran)";
    out.output = r.output;
    return false;
  }
  const nlohmann::json* list = find_record(r.records, "list");
  const nlohmann::json* end = find_record(r.records, "end");
  if (list == nullptr || end == nullptr || r.exit_code != 0) {
    fail(out, "exited with code " + std::to_string(r.exit_code) + " while listing its test cases");
    out.output = r.output;
    return false;
  }
  listed = string_list((*list)["cases"]);
  out.cases_listed = static_cast<int>(listed.size());
  if (listed.empty() && !allow_empty) {
    fail(out, "the lab program has no test cases");
    return false;
  }
  return true;
}

void judge_run(const JudgeContext& c, const std::vector<std::string>& listed, const SandboxResult& r, LabResult& out) {
  // Everything below that came from the lab program may carry student text: printable
  // characters only, so no report can be repainted by escape sequences.
  out.output = clean_text(r.output);
  out.seconds = r.seconds;
  out.cases.clear();
  out.metrics.clear();
  out.cases_listed = static_cast<int>(listed.size());

  // Collect what the records say, checking the start/end pairing as we go.
  std::string started, protocol_error;
  const nlohmann::json* end = nullptr;
  for (const auto& rec : r.records) {
    const std::string type = rec.value("type", "");
    if (end != nullptr && protocol_error.empty()) protocol_error = "records follow the final record";
    if (type == "start") {
      if (!started.empty() && protocol_error.empty()) protocol_error = "a test case started inside another";
      started = rec.value("case", "");
    } else if (type == "case") {
      CaseResult k;
      k.name = rec.value("case", "");
      if (k.name != started && protocol_error.empty()) protocol_error = "a test case ended that had not started";
      started.clear();
      k.passed = rec.value("status", "") == "passed";
      k.seconds = rec.value("seconds", 0.0);
      k.messages = string_list(rec.value("messages", nlohmann::json::array()));
      for (std::string& m : k.messages) m = clean_text(m);
      k.exception = clean_text(rec.value("exception", ""));
      out.cases.push_back(std::move(k));
    } else if (type == "sanitizer") {
      out.sanitizer_tool = rec.value("tool", "");
      out.sanitizer_available = rec.value("available", false);
      out.sanitizer_clean = rec.value("clean", false);
      out.sanitizer_worker_started = rec.value("worker_started", true);
      out.sanitizer_report = clean_text(rec.value("first_report", ""));
    } else if (type == "sandbox") {
      out.sandbox = rec.value("description", "");
      out.sandbox_degraded = rec.value("degraded", true);
    } else if (type == "metric") {
      out.metrics.push_back({rec.value("name", ""), rec.value("value", 0.0), rec.value("case", "")});
    } else if (type == "note") {
      const std::string note = clean_text(rec.value("text", ""));
      if (!note.empty() && std::find(out.notes.begin(), out.notes.end(), note) == out.notes.end() && out.notes.size() < 8)
        out.notes.push_back(note);
    } else if (type == "end") {
      end = &rec;
    }
  }

  if (judge_ending(c, r, out)) {
    // Say how far it got: the failing case is named in the reason.
    out.details = std::to_string(out.cases_passed()) + " of " + std::to_string(listed.size()) +
                  " test cases passed before it ended";
    add_cuda_hint(r, out);
    return;
  }
  if (judge_channel(c, r, out) || judge_skip(c, r, out)) {
    if (out.status == LabStatus::skipped) fail(out, "asked to be skipped only after listing its tests");
    return;
  }
  if (end == nullptr) {
    const std::string where = in_case(r.records);
    fail(out, "exited with code " + std::to_string(r.exit_code) + " before its tests finished" + where +
                  " (" + std::to_string(out.cases.size()) + " of " + std::to_string(listed.size()) + " test cases ran)",
         "the code under test ended the program (exit(), quick_exit(), _exit()); report problems by throwing "
         "course::Error instead");
    add_cuda_hint(r, out);
    return;
  }
  if (!protocol_error.empty()) {
    fail(out, "the runner's records are inconsistent: " + protocol_error);
    return;
  }
  // Totals in the final record against the per-case records, the exit code, and the listing.
  int failed_cases = 0;
  for (const auto& k : out.cases) failed_cases += k.passed ? 0 : 1;
  const int end_exit = end->value("exit_code", -1);
  std::vector<std::string> ran;
  for (const auto& k : out.cases) ran.push_back(k.name);
  std::vector<std::string> expected = listed;
  std::sort(ran.begin(), ran.end());
  std::sort(expected.begin(), expected.end());
  if (end->value("cases_run", -1) != static_cast<int>(out.cases.size()) || end->value("cases_failed", -1) != failed_cases) {
    fail(out, "the runner's totals do not match its per-test records");
  } else if (end_exit != r.exit_code) {
    fail(out, "exited with code " + std::to_string(r.exit_code) + " after the runner finished with code " +
                  std::to_string(end_exit),
         "the code under test changed the exit code (exit() from a destructor or atexit handler?)");
  } else if ((failed_cases == 0) != (r.exit_code == 0)) {
    fail(out, "exit code " + std::to_string(r.exit_code) + " does not match " + std::to_string(failed_cases) +
                  " failed test cases");
  } else if (ran != expected) {
    fail(out, "ran " + std::to_string(ran.size()) + " test cases but listed " + std::to_string(expected.size()) +
                  " (a different set)");
  } else {
    summarize_failures(c, out);
  }
  add_cuda_hint(r, out);
}

void judge_parts(const JudgeContext& c, const std::vector<std::string>& listed, const std::vector<LabResult>& parts,
                 LabResult& out) {
  out.cases.clear();
  out.metrics.clear();
  out.cases_listed = static_cast<int>(listed.size());
  out.seconds = 0;
  out.output.clear();
  for (const LabResult& part : parts) {
    out.cases.insert(out.cases.end(), part.cases.begin(), part.cases.end());
    out.metrics.insert(out.metrics.end(), part.metrics.begin(), part.metrics.end());
    for (const std::string& note : part.notes)
      if (std::find(out.notes.begin(), out.notes.end(), note) == out.notes.end() && out.notes.size() < 8)
        out.notes.push_back(note);
    if (out.sandbox.empty()) out.sandbox = part.sandbox;
    out.sandbox_degraded = out.sandbox_degraded || part.sandbox_degraded;
    out.seconds += part.seconds;
    if (!part.output.empty()) out.output += (out.output.empty() ? "" : "\n") + part.output;
  }
  // The report lists the cases in the order one program would have run them: the listing's.
  std::stable_sort(out.cases.begin(), out.cases.end(), [&](const CaseResult& a, const CaseResult& b) {
    return std::find(listed.begin(), listed.end(), a.name) < std::find(listed.begin(), listed.end(), b.name);
  });
  // A part that did not end cleanly (crash, time-out, tampering...) decides, as it would have
  // ended the one program: the first such part, in the order given.
  for (const LabResult& part : parts) {
    if (part.status == LabStatus::passed || part.failed_by_cases) continue;
    out.status = LabStatus::failed;
    if (part.status == LabStatus::skipped) {
      fail(out, "asked to be skipped only after listing its tests");
      return;
    }
    out.reason = part.reason;
    out.hint = part.hint;
    out.details = part.details;
    out.failed_by_cases = false;
    return;
  }
  // Every listed case ran exactly once, in one part or another (each part has checked its own).
  std::vector<std::string> ran, expected = listed;
  for (const auto& k : out.cases) ran.push_back(k.name);
  std::sort(ran.begin(), ran.end());
  std::sort(expected.begin(), expected.end());
  if (ran != expected) {
    fail(out, "ran " + std::to_string(ran.size()) + " test cases in " + std::to_string(parts.size()) +
                  " parts but listed " + std::to_string(expected.size()) + " (a different set)");
    return;
  }
  // The lab's time limit holds for all its cases together, as it did when one program ran them:
  // each part is killed at the limit, and parts that together took longer fail here.
  if (c.limits.timeout_s > 0 && out.seconds > c.limits.timeout_s) {
    std::ostringstream took;
    took.precision(3);
    took << out.seconds;
    fail(out, "timed out: its test cases took " + took.str() + " s together (run in " + std::to_string(parts.size()) +
                  " parts), over the limit of " + seconds_text(c.limits.timeout_s) + " s",
         "look for code that is far slower than it needs to be");
    return;
  }
  out.details.clear();
  out.failed_by_cases = false;
  summarize_failures(c, out);
}

}  // namespace course_grader
