// RAII owner of a typed buffer in GPU memory.
//
// cudaMalloc/cudaFree by hand leak on every early return or exception; this class frees the
// memory in its destructor, cannot be copied (two owners would free twice) and can be moved.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "course/cuda_check.hpp"

namespace course {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), count_ * sizeof(T)));
  }
  /// Allocates and uploads a host vector in one step.
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host.data(), host.size()); }

  ~DeviceBuffer() { release(); }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      ptr_ = std::exchange(other.ptr_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  T* get() { return ptr_; }
  const T* get() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  bool empty() const { return count_ == 0; }

  /// Host -> device copy of `count` elements (at most size()).
  void upload(const T* host, std::size_t count) {
    check_count(count, "upload");
    if (count > 0) CUDA_CHECK(cudaMemcpy(ptr_, host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }

  /// Device -> host copy of `count` elements (at most size()).
  void download(T* host, std::size_t count) const {
    check_count(count, "download");
    if (count > 0) CUDA_CHECK(cudaMemcpy(host, ptr_, count * sizeof(T), cudaMemcpyDeviceToHost));
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    download(host.data(), count_);
    return host;
  }

  /// Sets every byte to `byte` -- 0xFF turns float buffers into NaN, the course's "poison".
  void fill_bytes(int byte) {
    if (count_ > 0) CUDA_CHECK(cudaMemset(ptr_, byte, bytes()));
  }

 private:
  void check_count(std::size_t count, const char* op) const {
    if (count > count_)
      throw Error(std::string("DeviceBuffer::") + op + ": " + std::to_string(count) +
                  " elements requested but the buffer holds " + std::to_string(count_));
  }
  void release() noexcept {
    if (ptr_ != nullptr) cudaFree(ptr_);  // no throw from a destructor; errors here are sticky anyway
    ptr_ = nullptr;
    count_ = 0;
  }

  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace course
