#include "frames.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace grader::rpc {
namespace {

bool write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

using Clock = std::chrono::steady_clock;

// Reads exactly n bytes before the deadline (a default-constructed deadline means none).
FrameResult read_all(int fd, char* out, std::size_t n, Clock::time_point deadline, bool has_deadline) {
  while (n > 0) {
    int wait_ms = -1;
    if (has_deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return FrameResult::timed_out;
      wait_ms = static_cast<int>(left > 1'000'000 ? 1'000'000 : left);
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return FrameResult::closed;
    if (ready == 0) continue;  // the deadline check above decides
    const ssize_t r = ::read(fd, out, n);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r <= 0) return FrameResult::closed;
    out += r;
    n -= static_cast<std::size_t>(r);
  }
  return FrameResult::ok;
}

}  // namespace

bool write_frame(int fd, const std::string& payload) {
  const std::uint64_t size = payload.size();
  return write_all(fd, reinterpret_cast<const char*>(&size), sizeof size) && write_all(fd, payload.data(), payload.size());
}

FrameResult read_frame(int fd, std::string& payload, double timeout_s) {
  const bool has_deadline = timeout_s > 0;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::uint64_t size = 0;
  FrameResult r = read_all(fd, reinterpret_cast<char*>(&size), sizeof size, deadline, has_deadline);
  if (r != FrameResult::ok) return r;
  if (size > kMaxFrameBytes) return FrameResult::too_large;
  payload.resize(static_cast<std::size_t>(size));
  return read_all(fd, payload.data(), payload.size(), deadline, has_deadline);
}

}  // namespace grader::rpc
