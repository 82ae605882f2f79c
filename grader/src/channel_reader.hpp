// Grader side of the result channel: collects the bytes the runner sent, checks every record's
// tag (channel_protocol.hpp) and parses the payloads. The first bad record ends the trust in the
// whole stream: records after it are ignored and the error is kept for the verdict.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "channel_protocol.hpp"

namespace course_grader {

class ChannelReader {
 public:
  explicit ChannelReader(const course_channel::Key& key, std::size_t max_bytes = 8u << 20)
      : verifier_(key), max_bytes_(max_bytes) {}

  /// Feeds bytes as they arrive from the pipe.
  void feed(const char* data, std::size_t size);
  /// Call once the pipe is closed. `process_died` = the program ended abnormally, in which case a
  /// half-written last line is expected and not an error.
  void finish(bool process_died);

  const std::vector<nlohmann::json>& records() const { return records_; }
  /// Empty while every record checked out.
  const std::string& error() const { return error_; }

 private:
  void take_line(const std::string& line);

  course_channel::Verifier verifier_;
  std::size_t max_bytes_;
  std::size_t received_ = 0;
  std::string pending_;
  std::vector<nlohmann::json> records_;
  std::string error_;
};

}  // namespace course_grader
