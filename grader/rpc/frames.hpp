// Framing of the call channel: each message is an 8-byte length followed by that many bytes.
//
// A call is one request frame from the test program (function name, then the arguments) and one
// reply frame from the worker (a status byte, then the results or an error message).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace grader::rpc {

/// Descriptors the worker finds its channel on (set up by the test program before exec).
constexpr int kWorkerRequestFd = 3;
constexpr int kWorkerReplyFd = 4;
/// A memory region the test program shares with the worker (a sealed memfd, mapped by both): the
/// speed gate's bulk outputs go there instead of through the channel, so a timed round costs
/// little more than its work. The worker may write to it at any time; the test program copies
/// what it needs out of it first, and trusts nothing it has not checked.
constexpr int kWorkerSharedFd = 6;
constexpr std::size_t kSharedRegionBytes = std::size_t{32} << 20;

/// Largest frame either side accepts: the biggest real call (10,000 Fashion-MNIST images and
/// their logits) is ~32 MB.
constexpr std::uint64_t kMaxFrameBytes = std::uint64_t{1} << 30;

/// The first byte of a reply.
enum class ReplyStatus : std::uint8_t {
  ok = 0,               ///< results follow
  not_implemented = 1,  ///< course::NotImplemented; its message follows
  course_error = 2,     ///< course::Error; its message follows
  other_exception = 3,  ///< any other exception; "<type>: <what>" follows
  unknown_function = 4, ///< the worker has no such endpoint
  bad_request = 5,      ///< the request did not decode
  crashed = 6,          ///< written by the worker's fatal-signal handler: the signal number follows
};

/// Writes one frame; false if the descriptor is closed or broken.
bool write_frame(int fd, const std::string& payload);

enum class FrameResult { ok, closed, timed_out, too_large };
/// Reads one frame, waiting at most `timeout_s` seconds (<= 0: no limit).
FrameResult read_frame(int fd, std::string& payload, double timeout_s);

}  // namespace grader::rpc
