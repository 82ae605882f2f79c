// A demo kernel for chapter 4a, section on --use_fast_math: the numerically stable softmax of
// chapter 3 (lab 03's CPU version), one thread per row of L logits, on the GPU. The graded labs
// do not need it (the networks return logits and labels); it is here because exp() and the
// division are exactly what --use_fast_math changes. Compile it both ways and compare:
//
//   nvcc -arch=sm_90 -cubin -o softmax.cubin      lectures/tools/softmax_demo.cu
//   nvcc -arch=sm_90 -cubin -o softmax_fast.cubin --use_fast_math lectures/tools/softmax_demo.cu
//   cuobjdump -sass softmax.cubin | grep -c MUFU      (and the same for softmax_fast.cubin)
__global__ void softmax_rows(const float* logits, float* probs, int rows, int L) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* x = logits + row * L;
  float* y = probs + row * L;
  float m = x[0];  // subtract the row's maximum first, so that expf never overflows
  for (int l = 1; l < L; ++l) m = fmaxf(m, x[l]);
  float sum = 0.0f;
  for (int l = 0; l < L; ++l) {
    y[l] = expf(x[l] - m);
    sum += y[l];
  }
  for (int l = 0; l < L; ++l) y[l] = y[l] / sum;
}
