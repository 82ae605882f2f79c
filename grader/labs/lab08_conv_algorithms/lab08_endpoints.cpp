// Lab 08's RPC endpoints (a WORKER_SOURCE): the harness functions the tests may call in the
// sandboxed worker, where the student's code and the GPU are.
#include "rpc/endpoints.hpp"
#include "lab08_harness.hpp"

COURSE_RPC_ENDPOINTS(
    COURSE_RPC_ENDPOINT(lab08_harness::depthwise_conv3x3),
    COURSE_RPC_ENDPOINT(lab08_harness::im2col),
    COURSE_RPC_ENDPOINT(lab08_harness::sgemm),
    COURSE_RPC_ENDPOINT(lab08_harness::conv2d_im2col_gemm),
    COURSE_RPC_ENDPOINT(lab08_harness::winograd_filter_transform),
    COURSE_RPC_ENDPOINT(lab08_harness::winograd_input_transform),
    COURSE_RPC_ENDPOINT(lab08_harness::winograd_batched_multiply),
    COURSE_RPC_ENDPOINT(lab08_harness::winograd_output_transform),
    COURSE_RPC_ENDPOINT(lab08_harness::conv2d_winograd),
    COURSE_RPC_ENDPOINT(lab08_harness::call_with_arguments))
