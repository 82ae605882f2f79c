// main() of every lab's test program. Prints the seed before anything else so any failure can
// be replayed with COURSE_SEED=<seed>, and reports GPU labs as skipped (exit 77) without a GPU.
//
// When the grader starts the program it also opens a result channel (see
// grader/src/channel_protocol.hpp): this file reads the channel's key before any student code
// runs, and a doctest listener sends one signed record per event. The grader decides the verdict
// from those records alone; what the program prints is only shown to people. Run by hand or by
// CTest (no channel), the program behaves like any doctest program.
//
// Compiled once per build folder, not once per lab (doctest's implementation is most of its
// compile time): the lab's name and device come from lab_identity.cpp, compiled with each lab.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../src/channel_protocol.hpp"
#include "course/device.hpp"
#include "lab_identity.hpp"
#include "testkit.hpp"
#ifdef COURSE_LAB_USES_WORKER
#include "rpc/client.hpp"
#endif

namespace {

// Plain globals with constant initialisers: they are ready before any constructor runs, which
// open_result_channel() below relies on.
int g_result_fd = -1;
course_channel::Signer g_signer;

// Runs before ordinary static initialisers (priority 101 is the first one not reserved), so the
// key is read and its pipe closed before any code of the student's files can look for it.
__attribute__((constructor(101))) void open_result_channel() {
  const char* spec = std::getenv(course_channel::kEnvVar);
  if (spec == nullptr) return;
  int nonce_fd = -1, result_fd = -1;
  const bool parsed = std::sscanf(spec, "%d,%d", &nonce_fd, &result_fd) == 2;
  unsetenv(course_channel::kEnvVar);
  if (!parsed) return;
  char hex[33] = {};
  std::size_t got = 0;
  while (got < 32) {
    const ssize_t n = ::read(nonce_fd, hex + got, 32 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(nonce_fd);
  if (got != 32 || !course_channel::key_from_hex(std::string(hex, 32), g_signer.key)) return;
  // Programs the student code might start must not inherit the channel.
  ::fcntl(result_fd, F_SETFD, FD_CLOEXEC);
  g_result_fd = result_fd;
}

void send(const nlohmann::json& record) {
  if (g_result_fd < 0) return;
  const std::string line = g_signer.sign(record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(g_result_fd, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      g_result_fd = -1;  // the grader is gone or the descriptor was tampered with: stop sending
      return;
    }
    written += static_cast<std::size_t>(n);
  }
}

// Failure messages can be long (tensor reports); the grader only needs the start of a few.
constexpr std::size_t kMaxMessages = 5;
constexpr std::size_t kMaxMessageLength = 2000;

std::string clip(std::string text) {
  if (text.size() > kMaxMessageLength) text = text.substr(0, kMaxMessageLength) + " [...]";
  return text;
}

// The grader's folder: speed metrics are accepted only from test files inside it, never from a
// MESSAGE() in student code. COURSE_FIXTURE_DIR is "<repo>/grader/fixtures".
std::string grader_dir() {
  std::string fixtures = COURSE_FIXTURE_DIR;
  const std::size_t slash = fixtures.find_last_of('/');
  return slash == std::string::npos ? fixtures : fixtures.substr(0, slash + 1);
}

// Totals seen by the listener, reported in the final record (the listener itself is deleted by
// doctest when the run ends).
struct RunTotals {
  unsigned cases_run = 0;
  unsigned cases_failed = 0;
  int asserts = 0;
  int asserts_failed = 0;
};
RunTotals g_totals;

class ChannelListener : public doctest::IReporter {
 public:
  explicit ChannelListener(const doctest::ContextOptions& options) : options_(options) {}

  void report_query(const doctest::QueryData& query) override {
    if (!options_.list_test_cases) return;
    std::vector<std::string> names;
    for (unsigned i = 0; i < query.num_data; ++i) names.emplace_back(query.data[i]->m_name);
    send({{"type", "list"}, {"cases", names}});
  }

  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    g_totals.asserts = stats.numAsserts;
    g_totals.asserts_failed = stats.numAssertsFailed;
  }

  void test_case_start(const doctest::TestCaseData& test) override {
    current_ = test.m_name;
    messages_.clear();
    exception_.clear();
    send({{"type", "start"}, {"case", current_}});
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}

  void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
    ++g_totals.cases_run;
    if (!stats.testCaseSuccess) ++g_totals.cases_failed;
    nlohmann::json record = {{"type", "case"},
                             {"case", current_},
                             {"status", stats.testCaseSuccess ? "passed" : "failed"},
                             {"asserts", stats.numAssertsCurrentTest},
                             {"failed_asserts", stats.numAssertsFailedCurrentTest},
                             {"seconds", stats.seconds},
                             {"messages", messages_}};
    if (!exception_.empty()) record["exception"] = exception_;
    send(record);
  }

  void test_case_exception(const doctest::TestCaseException& e) override {
    exception_ = clip(e.error_string.c_str());
    // A crash (signal caught by doctest) ends the process right after this call.
    if (e.is_crash) send({{"type", "crash"}, {"case", current_}, {"what", exception_}});
  }

  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}

  void log_assert(const doctest::AssertData& a) override {
    if (!a.m_failed || messages_.size() >= kMaxMessages) return;
    std::ostringstream text;
    text << a.m_file << ':' << a.m_line << ": " << a.m_expr;
    if (a.m_threw) text << " threw " << a.m_exception.c_str();
    else if (a.m_decomp.size() > 0) text << " is " << a.m_decomp.c_str();
    // CHECK_MESSAGE and INFO text lives in the active contexts.
    const int contexts = doctest::IReporter::get_num_active_contexts();
    const doctest::IContextScope* const* scopes = doctest::IReporter::get_active_contexts();
    for (int i = 0; i < contexts; ++i) {
      text << "\n  ";
      scopes[i]->stringify(&text);
    }
    messages_.push_back(clip(text.str()));
  }

  void log_message(const doctest::MessageData& m) override {
    const std::string text = m.m_string.c_str();
    static const std::string kMetric = "course-metric ";
    static const std::string kNote = "course-note ";
    const std::string file = m.m_file != nullptr ? m.m_file : "";
    // A note for the report ("speed not judged: ..."), from the course's own test files only.
    if (text.rfind(kNote, 0) == 0 && file.rfind(grader_dir(), 0) == 0) {
      send({{"type", "note"}, {"case", current_}, {"text", clip(text.substr(kNote.size()))}});
      return;
    }
    if (text.rfind(kMetric, 0) == 0 && file.rfind(grader_dir(), 0) == 0) {
      std::istringstream fields(text.substr(kMetric.size()));
      std::string name;
      double value = 0;
      if (fields >> name >> value) send({{"type", "metric"}, {"case", current_}, {"name", name}, {"value", value}});
      return;
    }
    const bool is_failure = (m.m_severity & doctest::assertType::is_warn) == 0;
    if (is_failure && messages_.size() < kMaxMessages)
      messages_.push_back(clip(file + ':' + std::to_string(m.m_line) + ": " + text));
  }

  void test_case_skipped(const doctest::TestCaseData& test) override {
    if (!options_.list_test_cases) send({{"type", "skipped_case"}, {"case", test.m_name}});
  }

 private:
  const doctest::ContextOptions& options_;
  std::string current_;
  std::vector<std::string> messages_;
  std::string exception_;
};

REGISTER_LISTENER("course_channel", 1, ChannelListener);

}  // namespace

int main(int argc, char** argv) {
  std::printf("%s: seed %llu (replay with COURSE_SEED=%llu)\n", course_lab_identity::kName,
              static_cast<unsigned long long>(grader::seed()), static_cast<unsigned long long>(grader::seed()));
  std::fflush(stdout);
  send({{"type", "hello"}, {"lab", course_lab_identity::kName}, {"seed", grader::seed()}, {"gpu_lab", course_lab_identity::kIsGpu}});
  if (course_lab_identity::kIsGpu && !course::has_gpu()) {
    const std::string reason = course::gpu_unavailable_reason();
    std::printf("SKIPPED: %s needs a CUDA GPU: %s\n", course_lab_identity::kName, reason.c_str());
    send({{"type", "skip"}, {"reason", reason}});
    return course::kSkipReturnCode;
  }
#ifdef COURSE_LAB_USES_WORKER
  // The student's code runs in a separate worker process (grader/rpc/); say how it is isolated.
  grader::rpc::set_worker_gpu(course_lab_identity::kIsGpu);
  const grader::rpc::SandboxInfo sandbox = grader::rpc::worker_sandbox();
  std::printf("%s: student code runs in a worker: %s\n", course_lab_identity::kName, sandbox.description.c_str());
  std::fflush(stdout);
  send({{"type", "sandbox"}, {"mode", sandbox.mode}, {"degraded", sandbox.degraded}, {"description", sandbox.description}});
  // Second line of defence behind the grader's own refusal (course_grader grade --hidden): hidden
  // cases are never handed to an unisolated worker unless someone said --allow-degraded, also
  // when this program is run by hand with COURSE_HIDDEN_DIR.
  const char* hidden = std::getenv("COURSE_HIDDEN_DIR");
  const char* allow = std::getenv("COURSE_ALLOW_DEGRADED");
  if (sandbox.degraded && hidden != nullptr && *hidden != '\0' && (allow == nullptr || std::string(allow) != "1")) {
    std::printf("%s: refusing to run hidden cases: the worker sandbox is '%s' (%s), so student code could read "
                "them. Run as root, enable user namespaces, or set COURSE_ALLOW_DEGRADED=1 (course_grader: "
                "--allow-degraded) knowingly.\n",
                course_lab_identity::kName, sandbox.mode.c_str(), sandbox.description.c_str());
    std::fflush(stdout);
    return 2;
  }
#endif
  doctest::Context context(argc, argv);
#ifdef COURSE_LAB_USES_WORKER
  // The grader's sanitizer pass runs the lab's named subset only (COURSE_SANITIZE_TESTS, via lab_identity.cpp).
  if (const char* tool = std::getenv("COURSE_SANITIZER"); tool != nullptr && *tool != '\0')
    context.addFilter("test-case", course_lab_identity::kSanitizeTests);
#endif
  int exit_code = context.run();
#ifdef COURSE_LAB_USES_WORKER
  // A sanitizer run (COURSE_SANITIZER set by the grader): compute-sanitizer's own exit code
  // decides, read when the worker stops; its first report names the kernel and the source line.
  if (!context.shouldExit()) {
    const grader::rpc::SanitizerOutcome sanitizer = grader::rpc::finish_sanitizer();
    if (!sanitizer.tool.empty()) {
      const bool available = !grader::rpc::sanitizer_program().empty();
      std::printf("%s: compute-sanitizer %s: %s\n", course_lab_identity::kName, sanitizer.tool.c_str(),
                  !available ? "not installed, gate skipped" : sanitizer.clean ? "no errors" : "ERRORS");
      send({{"type", "sanitizer"},
            {"tool", sanitizer.tool},
            {"available", available},
            {"clean", sanitizer.clean},
            {"worker_started", sanitizer.worker_started},
            {"first_report", clip(sanitizer.first_report)}});
    }
  }
#endif
  send({{"type", "end"},
        {"exit_code", exit_code},
        {"cases_run", g_totals.cases_run},
        {"cases_failed", g_totals.cases_failed},
        {"asserts", g_totals.asserts},
        {"asserts_failed", g_totals.asserts_failed}});
  return exit_code;
}
