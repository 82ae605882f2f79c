// main() of every lab's worker: the process that holds the student's code and nothing else of
// value. It reads calls from descriptor 3, runs them through the endpoints linked into it and
// writes each reply to descriptor 4. It knows no expected values, no keys and no verdicts: the
// test program checks everything it returns.
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <cxxabi.h>
#include <iostream>
#include <new>
#include <string>
#include <typeinfo>

#include "course/error.hpp"
#include "endpoints.hpp"
#include "frames.hpp"

namespace grader::rpc {

std::vector<Endpoint>& endpoint_registry() {
  static std::vector<Endpoint> registry;
  return registry;
}

std::string canonical_name(const std::string& name) {
  std::string out;
  for (const char c : name)
    if (c != ' ') out.push_back(c);
  return out;
}

}  // namespace grader::rpc

namespace {

using namespace grader::rpc;

// A fatal signal: tell the test program which one (so the report can name it whatever sandbox
// tool sits between the two processes), then die of it.
extern "C" void on_fatal_signal(int sig) {
  char frame[8 + 1 + sizeof(int)];
  const std::uint64_t size = 1 + sizeof(int);
  std::memcpy(frame, &size, 8);
  frame[8] = static_cast<char>(ReplyStatus::crashed);
  std::memcpy(frame + 9, &sig, sizeof(int));
  [[maybe_unused]] const ssize_t n = ::write(kWorkerReplyFd, frame, sizeof frame);
  std::signal(sig, SIG_DFL);
  ::raise(sig);
}

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : type.name();
  std::free(demangled);
  return name;
}

Writer error_reply(ReplyStatus status, const std::string& message) {
  Writer w;
  w.scalar(status);
  write(w, message);
  return w;
}

}  // namespace

int main() {
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_fatal_signal);
  std::vector<std::pair<std::string, Handler>> table;
  for (const Endpoint& e : endpoint_registry()) table.emplace_back(canonical_name(e.name), e.handler);

  std::string request;
  while (read_frame(kWorkerRequestFd, request, 0) == FrameResult::ok) {
    Writer reply;
    try {
      Reader in(request);
      std::string name;
      read(in, name);
      name = canonical_name(name);
      Handler handler = nullptr;
      for (const auto& [known, h] : table)
        if (known == name) handler = h;
      if (handler == nullptr) {
        reply = error_reply(ReplyStatus::unknown_function, name);
      } else {
        handler(in, reply);
      }
    } catch (const course::NotImplemented& e) {
      reply = error_reply(ReplyStatus::not_implemented, e.what());
    } catch (const course::Error& e) {
      reply = error_reply(ReplyStatus::course_error, e.what());
    } catch (const std::bad_alloc&) {
      const char* limit = std::getenv("COURSE_WORKER_MEMORY_MB");
      reply = error_reply(ReplyStatus::other_exception,
                          std::string("std::bad_alloc: an allocation failed") +
                              (limit != nullptr && std::string(limit) != "0"
                                   ? std::string(": over the worker's memory limit of ") + limit + " MiB"
                                   : std::string()));
    } catch (const ProtocolError& e) {
      reply = error_reply(ReplyStatus::bad_request, e.what());
    } catch (const std::exception& e) {
      reply = error_reply(ReplyStatus::other_exception, type_name(typeid(e)) + ": " + e.what());
    } catch (...) {
      reply = error_reply(ReplyStatus::other_exception, "an exception that is not a std::exception");
    }
    // The student's own output appears next to the test that caused it.
    std::cout.flush();
    std::fflush(stdout);
    std::fflush(stderr);
    if (!write_frame(kWorkerReplyFd, reply.buffer())) break;
  }
  return 0;
}
