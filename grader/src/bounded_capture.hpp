// Keeps the first and the last part of a stream of unbounded length: a lab program that prints
// gigabytes must not exhaust the grader's memory, and for a person reading the report the start
// (seed, first failures) and the end (how it finished) are the useful parts.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

namespace course_grader {

class BoundedCapture {
 public:
  /// Keeps at most `head_bytes` from the start and `tail_bytes` from the end.
  BoundedCapture(std::size_t head_bytes, std::size_t tail_bytes) : head_limit_(head_bytes), tail_limit_(tail_bytes) {}

  void append(const char* data, std::size_t size) {
    total_ += size;
    const std::size_t to_head = head_.size() < head_limit_ ? std::min(size, head_limit_ - head_.size()) : 0;
    head_.append(data, to_head);
    data += to_head;
    size -= to_head;
    if (size == 0 || tail_limit_ == 0) return;
    tail_.append(data, size);
    // Trim lazily (at twice the limit) so the cost stays linear in the input.
    if (tail_.size() > 2 * tail_limit_) tail_.erase(0, tail_.size() - tail_limit_);
  }
  void append(const std::string& text) { append(text.data(), text.size()); }

  std::size_t total_bytes() const { return total_; }
  bool truncated() const { return total_ > head_.size() + std::min(tail_.size(), tail_limit_); }

  /// Head + tail, with a marker line saying how much was left out in between.
  std::string text() const {
    const std::size_t tail_kept = std::min(tail_.size(), tail_limit_);
    const std::string tail = tail_.substr(tail_.size() - tail_kept);
    if (!truncated()) return head_ + tail;
    const std::size_t omitted = total_ - head_.size() - tail_kept;
    return head_ + "\n[... " + std::to_string(omitted) + " bytes of output omitted ...]\n" + tail;
  }

 private:
  std::size_t head_limit_, tail_limit_;
  std::size_t total_ = 0;
  std::string head_, tail_;
};

}  // namespace course_grader
