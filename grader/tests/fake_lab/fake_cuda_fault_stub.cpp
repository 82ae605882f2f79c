// The fake labs' CUDA fault in a build without the CUDA toolkit (fake_cuda_fault.cu needs nvcc):
// there is no kernel to fault, so the behaviour fails its case with the reason instead. Only the
// grader.gpu suite asks for it, and that suite is not registered in such a build.
#include "course/error.hpp"

void fake_cuda_illegal_address() {
  throw course::Error("fake_cuda_illegal_address: built without the CUDA toolkit");
}
