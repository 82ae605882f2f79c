// RAII owners for every cuDNN and cuBLAS object the course creates.
//
// cuDNN hands out opaque pointers (a library handle, tensor/filter/convolution/pooling/activation
// descriptors) that must each be destroyed exactly once. Written by hand, every early return and
// every exception between create and destroy leaks one. These classes create the object in the
// constructor (a failure throws course::Error naming the create call), destroy it in the
// destructor, cannot be copied (two owners would destroy twice) and can be moved.
//
//   course::cudnn::TensorDescriptor x;                 // cudnnCreateTensorDescriptor
//   CUDNN_CHECK(cudnnSetTensor4dDescriptor(x, ...));   // converts to cudnnTensorDescriptor_t
//   ...                                                // destroyed at the end of the scope
//
// Header-only: nothing here needs its own translation unit, and common/ stays free of cuDNN.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <utility>

#include "course/cublas_check.hpp"
#include "course/cudnn_check.hpp"

namespace course::cudnn {

namespace detail {

// One traits struct per object kind: its C type and its create/destroy pair. The names are
// what an error message shows when creation fails.
struct HandleTraits {
  using type = cudnnHandle_t;
  static constexpr const char* create_call = "cudnnCreate";
  static cudnnStatus_t create(type* p) { return cudnnCreate(p); }
  static void destroy(type p) { cudnnDestroy(p); }
};
struct TensorTraits {
  using type = cudnnTensorDescriptor_t;
  static constexpr const char* create_call = "cudnnCreateTensorDescriptor";
  static cudnnStatus_t create(type* p) { return cudnnCreateTensorDescriptor(p); }
  static void destroy(type p) { cudnnDestroyTensorDescriptor(p); }
};
struct FilterTraits {
  using type = cudnnFilterDescriptor_t;
  static constexpr const char* create_call = "cudnnCreateFilterDescriptor";
  static cudnnStatus_t create(type* p) { return cudnnCreateFilterDescriptor(p); }
  static void destroy(type p) { cudnnDestroyFilterDescriptor(p); }
};
struct ConvolutionTraits {
  using type = cudnnConvolutionDescriptor_t;
  static constexpr const char* create_call = "cudnnCreateConvolutionDescriptor";
  static cudnnStatus_t create(type* p) { return cudnnCreateConvolutionDescriptor(p); }
  static void destroy(type p) { cudnnDestroyConvolutionDescriptor(p); }
};
struct PoolingTraits {
  using type = cudnnPoolingDescriptor_t;
  static constexpr const char* create_call = "cudnnCreatePoolingDescriptor";
  static cudnnStatus_t create(type* p) { return cudnnCreatePoolingDescriptor(p); }
  static void destroy(type p) { cudnnDestroyPoolingDescriptor(p); }
};
struct ActivationTraits {
  using type = cudnnActivationDescriptor_t;
  static constexpr const char* create_call = "cudnnCreateActivationDescriptor";
  static cudnnStatus_t create(type* p) { return cudnnCreateActivationDescriptor(p); }
  static void destroy(type p) { cudnnDestroyActivationDescriptor(p); }
};

}  // namespace detail

/// Owns one cuDNN object of the kind `Traits` describes.
template <typename Traits>
class Owned {
 public:
  using type = typename Traits::type;

  Owned() {
    const cudnnStatus_t status = Traits::create(&object_);
    if (status != CUDNN_STATUS_SUCCESS) {
      object_ = nullptr;
      ::course::detail::throw_cudnn_error(status, Traits::create_call, __FILE__, __LINE__);
    }
  }
  ~Owned() { reset(); }

  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      object_ = std::exchange(other.object_, nullptr);
    }
    return *this;
  }

  type get() const { return object_; }
  /// Lets an owner be passed wherever cuDNN expects the raw object.
  operator type() const { return object_; }  // NOLINT(google-explicit-constructor): by design

 private:
  void reset() noexcept {
    // A destroy status is ignored: a destructor must not throw, and the only failures are a
    // null object (impossible here) or a GPU that is already gone.
    if (object_ != nullptr) Traits::destroy(object_);
    object_ = nullptr;
  }

  type object_ = nullptr;
};

/// cuDNN's name of a forward convolution algorithm without the CUDNN_CONVOLUTION_FWD_ALGO_ prefix
/// ("IMPLICIT_PRECOMP_GEMM"), for the benchmarks' tables; "?" for a value this cuDNN added later.
inline const char* algorithm_name(cudnnConvolutionFwdAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
  }
}

using Handle = Owned<detail::HandleTraits>;
using TensorDescriptor = Owned<detail::TensorTraits>;
using FilterDescriptor = Owned<detail::FilterTraits>;
using ConvolutionDescriptor = Owned<detail::ConvolutionTraits>;
using PoolingDescriptor = Owned<detail::PoolingTraits>;
using ActivationDescriptor = Owned<detail::ActivationTraits>;

/// Owns one cuBLAS handle (cuBLAS reports errors with its own status type, hence its own class).
class CublasHandle {
 public:
  CublasHandle() {
    const cublasStatus_t status = cublasCreate(&handle_);
    if (status != CUBLAS_STATUS_SUCCESS) {
      handle_ = nullptr;
      ::course::detail::throw_cublas_error(status, "cublasCreate", __FILE__, __LINE__);
    }
  }
  ~CublasHandle() { reset(); }

  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  CublasHandle(CublasHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  CublasHandle& operator=(CublasHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }

  cublasHandle_t get() const { return handle_; }
  operator cublasHandle_t() const { return handle_; }  // NOLINT(google-explicit-constructor)

 private:
  void reset() noexcept {
    if (handle_ != nullptr) cublasDestroy(handle_);
    handle_ = nullptr;
  }

  cublasHandle_t handle_ = nullptr;
};

}  // namespace course::cudnn
