#include "channel_reader.hpp"

namespace course_grader {

void ChannelReader::feed(const char* data, std::size_t size) {
  if (!error_.empty()) return;
  received_ += size;
  if (received_ > max_bytes_) {
    error_ = "more than " + std::to_string(max_bytes_ >> 20) + " MiB of records (not the runner's doing)";
    return;
  }
  pending_.append(data, size);
  std::size_t start = 0;
  for (std::size_t newline; error_.empty() && (newline = pending_.find('\n', start)) != std::string::npos;
       start = newline + 1)
    take_line(pending_.substr(start, newline - start));
  pending_.erase(0, start);
}

void ChannelReader::finish(bool process_died) {
  if (error_.empty() && !pending_.empty() && !process_died)
    error_ = "the last record is incomplete (something wrote to the channel without a newline)";
  pending_.clear();
}

void ChannelReader::take_line(const std::string& line) {
  std::string payload, why;
  if (!verifier_.accept(line, payload, why)) {
    error_ = why;
    return;
  }
  nlohmann::json record = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !record.contains("type") || !record["type"].is_string()) {
    // A correctly tagged record that is not what the runner writes: a bug, not an attack.
    error_ = "record " + std::to_string(records_.size()) + " is not a runner record";
    return;
  }
  records_.push_back(std::move(record));
}

}  // namespace course_grader
