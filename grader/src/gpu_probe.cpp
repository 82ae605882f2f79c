#include "gpu_probe.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "course/device.hpp"

namespace course_grader {

GpuProbe probe_gpu() {
  GpuProbe probe;
  int fds[2];
  if (::pipe(fds) != 0) {
    probe.reason = "cannot check for a GPU (pipe failed)";
    return probe;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(30);  // a wedged driver must not hang the grader
    std::string answer;
    try {
      if (course::has_gpu()) {
        const course::DeviceInfo device = course::query_device(0);
        answer = "1" + std::to_string(device.global_memory_bytes >> 30) + " " + device.summary();
      } else {
        answer = "0" + course::gpu_unavailable_reason();
      }
    } catch (const std::exception& e) {
      answer = std::string("0") + e.what();
    }
    ssize_t ignored = ::write(fds[1], answer.data(), answer.size());
    (void)ignored;
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string answer;
  char buffer[512];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) answer.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  if (answer.empty()) {
    probe.reason = "the GPU check did not answer";
  } else if (answer[0] == '1') {
    probe.available = true;
    const std::size_t space = answer.find(' ');
    probe.memory_gib = static_cast<std::size_t>(std::strtoull(answer.c_str() + 1, nullptr, 10));
    probe.name = space == std::string::npos ? answer.substr(1) : answer.substr(space + 1);
  } else {
    probe.reason = answer.substr(1);
  }
  return probe;
}

}  // namespace course_grader
