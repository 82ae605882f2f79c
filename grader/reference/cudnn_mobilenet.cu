// The cuDNN + cuBLAS MobileNetV2 of cudnn_mobilenet.hpp (host code only: every kernel is a
// library's). Layer classes first (a convolution, a 1x1 convolution with its cuBLAS alternative,
// bias + activation), then the block and the network built from them.
#include "cudnn_mobilenet.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "course/mobilenet.hpp"

namespace cudnn_reference {
namespace detail {

void require(bool ok, const std::string& message) {
  if (!ok) throw course::Error("cudnn_reference: " + message);
}

/// Median of 5 timed runs of `work` (after one untimed) on the legacy default stream, in ms: the
/// constructor's cuDNN-versus-cuBLAS choice for the 1x1 layers. L2 is not flushed here; both
/// candidates are timed the same way, which is all the choice needs.
template <typename Work>
double median_ms(Work&& work) {
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  work();
  std::vector<float> samples(5);
  for (float& ms : samples) {
    CUDA_CHECK(cudaEventRecord(start, nullptr));
    work();
    CUDA_CHECK(cudaEventRecord(stop, nullptr));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(samples.begin(), samples.end());
  return samples[2];
}

/// y = conv(x, w), no bias: C -> K channels, R x R filter, zero padding, stride, groups (groups =
/// C = K is the depthwise convolution, filter [C,1,R,R]).
class Convolution {
 public:
  Convolution(int C, int H, int W, int K, int R, int pad, int stride, int groups)
      : C_(C), H_(H), W_(W), K_(K), P_((H + 2 * pad - R) / stride + 1), Q_((W + 2 * pad - R) / stride + 1) {
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C / groups, R, R));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_, pad, pad, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_, groups));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH));  // FP32 FMAs, no TF32
  }

  void describe(int n) {
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, C_, H_, W_));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, K_, P_, Q_));
  }

  /// Runs every algorithm on these buffers (y is overwritten) and keeps the fastest allowed one.
  void find(cudnnHandle_t h, const float* x, const float* w, float* y, void* ws, std::size_t ws_bytes) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(h, x_, x, w_, w, conv_, y_, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                       &returned, perf, ws, ws_bytes));
    for (int i = 0; i < returned; ++i) {  // sorted fastest first
      const cudnnConvolutionFwdAlgoPerf_t& p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS || p.algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED ||
          p.mathType == CUDNN_TENSOR_OP_MATH || p.memory > ws_bytes)
        continue;
      algo_ = p.algo;
      workspace_ = p.memory;
      find_ms_ = static_cast<double>(p.time);
      return;
    }
    require(false, "no FP32 cuDNN algorithm for a convolution of " + std::to_string(C_) + " -> " + std::to_string(K_) +
                       " channels at " + std::to_string(H_) + "x" + std::to_string(W_));
  }

  /// The chosen algorithm's workspace for the current descriptors (throws if it does not apply).
  std::size_t workspace(cudnnHandle_t h) const {
    std::size_t bytes = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, x_, w_, conv_, y_, algo_, &bytes));
    return bytes;
  }

  void forward(cudnnHandle_t h, const float* x, const float* w, float* y, void* ws, std::size_t ws_bytes) const {
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(cudnnConvolutionForward(h, &one, x_, x, w_, w, conv_, algo_, ws, ws_bytes, &zero, y_, y));
  }

  int out_h() const { return P_; }
  int out_w() const { return Q_; }
  cudnnConvolutionFwdAlgo_t algo() const { return algo_; }
  double find_ms() const { return find_ms_; }

 private:
  int C_, H_, W_, K_, P_, Q_;
  course::cudnn::TensorDescriptor x_, y_;
  course::cudnn::FilterDescriptor w_;
  course::cudnn::ConvolutionDescriptor conv_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::size_t workspace_ = 0;
  double find_ms_ = -1.0;
};

/// A 1x1 convolution [n,C,H,W] -> [n,K,H,W] (weight [K,C]), no bias: a cuDNN convolution, or per
/// image the product Y_n[K,HW] = W[K,C] X_n[C,HW] as one cuBLAS strided-batched SGEMM (column-major
/// view: Y_n^T = X_n^T W^T, so no transposes are needed).
class PointwiseConv {
 public:
  PointwiseConv(cublasHandle_t cublas, int C, int H, int W, int K)
      : cublas_(cublas), C_(C), HW_(H * W), K_(K), conv_(C, H, W, K, 1, 0, 1, 1) {}

  void describe(int n) {
    n_ = n;
    conv_.describe(n);
  }

  /// Finds cuDNN's best algorithm, then times it and the GEMM on the same buffers.
  void find(cudnnHandle_t h, const float* x, const float* w, float* y, void* ws, std::size_t ws_bytes) {
    conv_.find(h, x, w, y, ws, ws_bytes);
    cudnn_ms_ = median_ms([&] { conv_.forward(h, x, w, y, ws, ws_bytes); });
    cublas_ms_ = median_ms([&] { gemm(x, w, y); });
    set_mode(Pointwise::kFastest);
  }

  void set_mode(Pointwise mode) {
    use_cublas_ = mode == Pointwise::kCublas || (mode == Pointwise::kFastest && cublas_ms_ < cudnn_ms_);
  }

  /// What a cuDNN run would need: kept allocated so that set_mode can switch at any time.
  std::size_t workspace(cudnnHandle_t h) const { return conv_.workspace(h); }

  void forward(cudnnHandle_t h, const float* x, const float* w, float* y, void* ws, std::size_t ws_bytes) const {
    if (use_cublas_)
      gemm(x, w, y);
    else
      conv_.forward(h, x, w, y, ws, ws_bytes);
  }

  LayerChoice choice(const std::string& layer) const {
    return {layer,
            use_cublas_ ? std::string("cuBLAS SgemmStridedBatched")
                        : std::string("cuDNN ") + course::cudnn::algorithm_name(conv_.algo()),
            cudnn_ms_, cublas_ms_};
  }

 private:
  void gemm(const float* x, const float* w, float* y) const {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemmStridedBatched(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, HW_, K_, C_, &one, x, HW_,
                                           static_cast<long long>(C_) * HW_, w, C_, 0, &zero, y, HW_,
                                           static_cast<long long>(K_) * HW_, n_));
  }

  cublasHandle_t cublas_;
  int C_, HW_, K_, n_ = 0;
  Convolution conv_;
  double cudnn_ms_ = -1.0, cublas_ms_ = -1.0;
  bool use_cublas_ = false;
};

/// y[n,k,p,q] += bias[k], then ReLU6 when asked; add() is the residual y += x (same shape).
class BiasActivation {
 public:
  BiasActivation(int K, int P, int Q, bool relu6) : K_(K), P_(P), Q_(Q), relu6_(relu6) {
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(bias_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, K, 1, 1));
    CUDNN_CHECK(cudnnSetActivationDescriptor(clip_, CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_PROPAGATE_NAN, 6.0));
  }
  void describe(int n) { CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, K_, P_, Q_)); }

  void forward(cudnnHandle_t h, const float* bias, float* y) const {
    const float one = 1.0f;
    CUDNN_CHECK(cudnnAddTensor(h, &one, bias_, bias, &one, y_, y));
    if (relu6_) {
      const float zero = 0.0f;
      CUDNN_CHECK(cudnnActivationForward(h, clip_, &one, y_, y, &zero, y_, y));  // in place
    }
  }
  void add(cudnnHandle_t h, const float* x, float* y) const {
    const float one = 1.0f;
    CUDNN_CHECK(cudnnAddTensor(h, &one, y_, x, &one, y_, y));
  }

 private:
  int K_, P_, Q_;
  bool relu6_;
  course::cudnn::TensorDescriptor y_, bias_;
  course::cudnn::ActivationDescriptor clip_;
};

}  // namespace detail

// ---- the block ---------------------------------------------------------------------------------

CudnnInvertedResidual::CudnnInvertedResidual(cudnnHandle_t cudnn, cublasHandle_t cublas,
                                             const lab08::InvertedResidualWeights& weights, int N, int in, int hidden,
                                             int out, int H, int W, int stride, const std::string& name,
                                             const float* d_input, float* d_output, const BlockScratch& scratch)
    : cudnn_(cudnn), w_(weights), in_(in), hidden_(hidden), out_(out), H_(H), W_(W), stride_(stride), name_(name) {
  const bool expand = hidden != in;
  detail::require(expand == (weights.expand_weight != nullptr), name + ": expand weight given iff hidden != in");
  if (expand) {
    expand_ = std::make_unique<detail::PointwiseConv>(cublas, in, H, W, hidden);
    expand_act_ = std::make_unique<detail::BiasActivation>(hidden, H, W, true);
  }
  depthwise_ = std::make_unique<detail::Convolution>(hidden, H, W, hidden, 3, 1, stride, hidden);
  const int P = depthwise_->out_h(), Q = depthwise_->out_w();
  depthwise_act_ = std::make_unique<detail::BiasActivation>(hidden, P, Q, true);
  project_ = std::make_unique<detail::PointwiseConv>(cublas, hidden, P, Q, out);
  project_bias_ = std::make_unique<detail::BiasActivation>(out, P, Q, false);
  set_batch(N);
  // Each search runs on the layer's real input, so the buffers hold meaningful values in turn.
  const float* e = d_input;
  if (expand) {
    expand_->find(cudnn, d_input, w_.expand_weight, scratch.expanded, scratch.workspace, scratch.workspace_bytes);
    e = scratch.expanded;
  }
  depthwise_->find(cudnn, e, w_.depthwise_weight, scratch.depthwise, scratch.workspace, scratch.workspace_bytes);
  project_->find(cudnn, scratch.depthwise, w_.project_weight, d_output, scratch.workspace, scratch.workspace_bytes);
}

CudnnInvertedResidual::~CudnnInvertedResidual() = default;
CudnnInvertedResidual::CudnnInvertedResidual(CudnnInvertedResidual&&) noexcept = default;
CudnnInvertedResidual& CudnnInvertedResidual::operator=(CudnnInvertedResidual&&) noexcept = default;

std::size_t CudnnInvertedResidual::set_batch(int n) {
  if (expand_) {
    expand_->describe(n);
    expand_act_->describe(n);
  }
  depthwise_->describe(n);
  depthwise_act_->describe(n);
  project_->describe(n);
  project_bias_->describe(n);
  return workspace_bytes();
}

std::size_t CudnnInvertedResidual::workspace_bytes() const {
  std::size_t bytes = std::max(depthwise_->workspace(cudnn_), project_->workspace(cudnn_));
  return expand_ ? std::max(bytes, expand_->workspace(cudnn_)) : bytes;
}

void CudnnInvertedResidual::set_pointwise(Pointwise mode) {
  if (expand_) expand_->set_mode(mode);
  project_->set_mode(mode);
}

void CudnnInvertedResidual::forward(const float* d_input, float* d_output, const BlockScratch& s) const {
  const float* e = d_input;
  if (expand_) {
    expand_->forward(cudnn_, d_input, w_.expand_weight, s.expanded, s.workspace, s.workspace_bytes);
    expand_act_->forward(cudnn_, w_.expand_bias, s.expanded);
    e = s.expanded;
  }
  depthwise_->forward(cudnn_, e, w_.depthwise_weight, s.depthwise, s.workspace, s.workspace_bytes);
  depthwise_act_->forward(cudnn_, w_.depthwise_bias, s.depthwise);
  project_->forward(cudnn_, s.depthwise, w_.project_weight, d_output, s.workspace, s.workspace_bytes);
  project_bias_->forward(cudnn_, w_.project_bias, d_output);
  if (stride_ == 1 && in_ == out_) project_bias_->add(cudnn_, d_input, d_output);
}

std::vector<LayerChoice> CudnnInvertedResidual::choices() const {
  std::vector<LayerChoice> out;
  if (expand_) out.push_back(expand_->choice(name_ + ".expand"));
  out.push_back({name_ + ".depthwise", std::string("cuDNN ") + course::cudnn::algorithm_name(depthwise_->algo()),
                 depthwise_->find_ms(), -1.0});
  out.push_back(project_->choice(name_ + ".project"));
  return out;
}

// ---- a block on its own ------------------------------------------------------------------------

namespace {
// The algorithm search may use up to this much workspace; afterwards only what the chosen
// algorithms need stays allocated. 1 GiB lets explicit-GEMM algorithms compete at batch 10,000.
constexpr std::size_t kSearchWorkspace = std::size_t{1} << 30;
}  // namespace

CudnnBlock::CudnnBlock(const lab08::InvertedResidualWeights& weights, int N, int in, int hidden, int out, int H,
                       int W, int stride) {
  const int P = (H - 1) / stride + 1, Q = (W - 1) / stride + 1;
  if (hidden != in) expanded_ = course::DeviceBuffer<float>(std::size_t(N) * hidden * H * W);
  depthwise_ = course::DeviceBuffer<float>(std::size_t(N) * hidden * P * Q);
  // The search needs an input and an output of its own; zeros are as good as any values for timing.
  course::DeviceBuffer<float> x(std::size_t(N) * in * H * W), y(std::size_t(N) * out * P * Q);
  x.fill_bytes(0);
  course::DeviceBuffer<unsigned char> search(kSearchWorkspace);
  block_ = std::make_unique<CudnnInvertedResidual>(cudnn_, cublas_, weights, N, in, hidden, out, H, W, stride,
                                                   "block", x.get(), y.get(),
                                                   BlockScratch{expanded_.get(), depthwise_.get(), search.get(),
                                                                search.bytes()});
  search = course::DeviceBuffer<unsigned char>();
  workspace_ = course::DeviceBuffer<unsigned char>(std::max<std::size_t>(block_->workspace_bytes(), 1));
  CUDA_CHECK(cudaDeviceSynchronize());
}

CudnnBlock::~CudnnBlock() = default;

void CudnnBlock::forward(const float* d_input, float* d_output, cudaStream_t stream) {
  CUDNN_CHECK(cudnnSetStream(cudnn_, stream));
  CUBLAS_CHECK(cublasSetStream(cublas_, stream));
  block_->forward(d_input, d_output, BlockScratch{expanded_.get(), depthwise_.get(), workspace_.get(), workspace_.bytes()});
}

// ---- the network -------------------------------------------------------------------------------

namespace mn = course::mobilenet;

CudnnMobileNetV2::CudnnMobileNetV2(const lab08::FoldedMobileNet& net, int max_batch, int search_batch)
    : max_batch_(max_batch), batch_(max_batch) {
  const auto& specs = mn::blocks();
  detail::require(max_batch >= 1, "max_batch must be >= 1");
  detail::require(search_batch >= 0, "search_batch must be >= 0");
  // The batch the algorithm searches run at (the buffers are sized for max_batch, which holds it).
  const int searched = search_batch > 0 ? std::min(search_batch, max_batch) : max_batch;
  detail::require(net.blocks.size() == specs.size(), "the network must have " + std::to_string(specs.size()) + " blocks");
  CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));  // FP32 SGEMM, no TF32

  const auto upload = [this](const course::Tensor& t) -> const float* {
    if (t.numel() == 0) return nullptr;  // a t = 1 block's expand weights
    weights_.emplace_back(t.values());
    return weights_.back().get();  // a device pointer: stays valid when the vector grows
  };
  stem_w_ = upload(net.stem_weight);
  stem_b_ = upload(net.stem_bias);
  std::vector<lab08::InvertedResidualWeights> block_weights;
  for (const lab08::FoldedBlock& f : net.blocks) {
    lab08::InvertedResidualWeights w;
    w.expand_weight = upload(f.expand_weight);
    w.expand_bias = upload(f.expand_bias);
    w.depthwise_weight = upload(f.depthwise_weight);
    w.depthwise_bias = upload(f.depthwise_bias);
    w.project_weight = upload(f.project_weight);
    w.project_bias = upload(f.project_bias);
    block_weights.push_back(w);
  }
  head_w_ = upload(net.head_weight);
  head_b_ = upload(net.head_bias);
  classifier_w_ = upload(net.classifier_weight);
  classifier_b_ = upload(net.classifier_bias);

  // Per image: the largest block input/output, expanded and depthwise tensors.
  std::int64_t act = std::int64_t{mn::kStemChannels} * mn::kInputSize * mn::kInputSize, expanded = 0, depthwise = 0;
  for (const mn::BlockSpec& b : specs) {
    act = std::max<std::int64_t>(act, std::int64_t{b.out_channels} * b.out_size() * b.out_size());
    if (b.expand()) expanded = std::max<std::int64_t>(expanded, std::int64_t{b.hidden} * b.size * b.size);
    depthwise = std::max<std::int64_t>(depthwise, std::int64_t{b.hidden} * b.out_size() * b.out_size());
  }
  const mn::BlockSpec& last = specs.back();
  const int head_pixels = last.out_size() * last.out_size();
  expanded = std::max<std::int64_t>(expanded, std::int64_t{mn::kHeadChannels} * head_pixels);  // the head's output
  detail::require(std::max(expanded, depthwise) * max_batch <= INT_MAX, "max_batch too large for cuDNN's int sizes");
  for (auto& a : act_) a = course::DeviceBuffer<float>(std::size_t(act) * max_batch);
  expanded_ = course::DeviceBuffer<float>(std::size_t(expanded) * max_batch);
  depthwise_ = course::DeviceBuffer<float>(std::size_t(depthwise) * max_batch);
  pooled_ = course::DeviceBuffer<float>(std::size_t(mn::kHeadChannels) * max_batch);
  act_[0].fill_bytes(0);  // the stem's search input: [n,1,28,28] fits in it

  course::DeviceBuffer<unsigned char> search(kSearchWorkspace);
  const BlockScratch scratch{expanded_.get(), depthwise_.get(), search.get(), search.bytes()};
  stem_ = std::make_unique<detail::Convolution>(1, mn::kInputSize, mn::kInputSize, mn::kStemChannels, 3, 1, 1, 1);
  stem_->describe(searched);
  stem_->find(cudnn_, act_[0].get(), stem_w_, act_[1].get(), search.get(), search.bytes());
  stem_act_ = std::make_unique<detail::BiasActivation>(mn::kStemChannels, mn::kInputSize, mn::kInputSize, true);
  int current = 1;
  blocks_.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const mn::BlockSpec& b = specs[i];
    blocks_.emplace_back(cudnn_, cublas_, block_weights[i], searched, b.in_channels, b.hidden, b.out_channels, b.size,
                         b.size, b.stride, b.name(static_cast<int>(i)), act_[current].get(), act_[1 - current].get(),
                         scratch);
    current = 1 - current;
  }
  head_ = std::make_unique<detail::PointwiseConv>(cublas_, last.out_channels, last.out_size(), last.out_size(),
                                                  mn::kHeadChannels);
  head_->describe(searched);
  head_->find(cudnn_, act_[current].get(), head_w_, expanded_.get(), search.get(), search.bytes());
  head_act_ = std::make_unique<detail::BiasActivation>(mn::kHeadChannels, last.out_size(), last.out_size(), true);
  CUDNN_CHECK(cudnnSetPooling2dDescriptor(pool_, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, CUDNN_PROPAGATE_NAN,
                                          last.out_size(), last.out_size(), 0, 0, last.out_size(), last.out_size()));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(classifier_bias_desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                                         mn::kNumClasses, 1, 1));
  search = course::DeviceBuffer<unsigned char>();
  workspace_ = course::DeviceBuffer<unsigned char>(std::max<std::size_t>(set_batch(max_batch), 1));
  CUDA_CHECK(cudaDeviceSynchronize());
}

CudnnMobileNetV2::~CudnnMobileNetV2() = default;

std::size_t CudnnMobileNetV2::set_batch(int n) {
  stem_->describe(n);
  stem_act_->describe(n);
  std::size_t bytes = stem_->workspace(cudnn_);
  for (CudnnInvertedResidual& b : blocks_) bytes = std::max(bytes, b.set_batch(n));
  head_->describe(n);
  bytes = std::max(bytes, head_->workspace(cudnn_));
  head_act_->describe(n);
  const mn::BlockSpec& last = mn::blocks().back();
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(head_out_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, mn::kHeadChannels,
                                         last.out_size(), last.out_size()));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(pooled_desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, mn::kHeadChannels, 1, 1));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(logits_desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, mn::kNumClasses, 1, 1));
  batch_ = n;
  return bytes;
}

void CudnnMobileNetV2::set_pointwise(Pointwise mode) {
  for (CudnnInvertedResidual& b : blocks_) b.set_pointwise(mode);
  head_->set_mode(mode);
}

std::vector<LayerChoice> CudnnMobileNetV2::choices() const {
  std::vector<LayerChoice> out{{"stem", std::string("cuDNN ") + course::cudnn::algorithm_name(stem_->algo()),
                                stem_->find_ms(), -1.0}};
  for (const CudnnInvertedResidual& b : blocks_)
    for (const LayerChoice& c : b.choices()) out.push_back(c);
  out.push_back(head_->choice("head"));
  return out;
}

void CudnnMobileNetV2::forward(const float* d_images, int n, float* d_logits, cudaStream_t stream) {
  detail::require(d_images != nullptr && d_logits != nullptr, "d_images and d_logits must not be null");
  detail::require(n >= 1 && n <= max_batch_, "n = " + std::to_string(n) + " outside [1, max_batch = " +
                                                 std::to_string(max_batch_) + "]");
  if (n != batch_)  // host-side descriptors only; the algorithms found at max_batch stay
    detail::require(set_batch(n) <= workspace_.bytes(), "the algorithms found at max_batch need more workspace at n = " +
                                                            std::to_string(n));
  CUDNN_CHECK(cudnnSetStream(cudnn_, stream));
  CUBLAS_CHECK(cublasSetStream(cublas_, stream));
  void* ws = workspace_.get();
  const std::size_t ws_bytes = workspace_.bytes();

  stem_->forward(cudnn_, d_images, stem_w_, act_[0].get(), ws, ws_bytes);
  stem_act_->forward(cudnn_, stem_b_, act_[0].get());
  const BlockScratch scratch{expanded_.get(), depthwise_.get(), ws, ws_bytes};
  int current = 0;
  for (const CudnnInvertedResidual& b : blocks_) {
    b.forward(act_[current].get(), act_[1 - current].get(), scratch);
    current = 1 - current;
  }
  head_->forward(cudnn_, act_[current].get(), head_w_, expanded_.get(), ws, ws_bytes);  // [n,256,7,7]
  head_act_->forward(cudnn_, head_b_, expanded_.get());
  const float one = 1.0f, zero = 0.0f;
  CUDNN_CHECK(cudnnPoolingForward(cudnn_, pool_, &one, head_out_, expanded_.get(), &zero, pooled_desc_, pooled_.get()));
  // logits [n,10] row-major = pooled [n,256] W^T. cuBLAS is column-major: there logits is a 10 x n
  // matrix, W [10,256] row-major reads as its transpose (256 x 10), pooled as 256 x n, so
  // logits = op_T(W) * pooled.
  CUBLAS_CHECK(cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, mn::kNumClasses, n, mn::kHeadChannels, &one, classifier_w_,
                           mn::kHeadChannels, pooled_.get(), mn::kHeadChannels, &zero, d_logits, mn::kNumClasses));
  CUDNN_CHECK(cudnnAddTensor(cudnn_, &one, classifier_bias_desc_, classifier_b_, &one, logits_desc_, d_logits));
}

}  // namespace cudnn_reference
