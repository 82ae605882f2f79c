// Lab 05's RPC endpoints (a WORKER_SOURCE): the harness functions the tests may call in the
// sandboxed worker, where the student's code and the GPU are.
#include "rpc/endpoints.hpp"
#include "lab05_harness.hpp"

COURSE_RPC_ENDPOINTS(
    COURSE_RPC_ENDPOINT(lab05_harness::conv2d_output_shape),
    COURSE_RPC_ENDPOINT(lab05_harness::pool2d_output_shape),
    COURSE_RPC_ENDPOINT(lab05_harness::conv2d_forward),
    COURSE_RPC_ENDPOINT(lab05_harness::conv_bias_relu_forward),
    COURSE_RPC_ENDPOINT(lab05_harness::relu_forward),
    COURSE_RPC_ENDPOINT(lab05_harness::max_pool2d),
    COURSE_RPC_ENDPOINT(lab05_harness::linear_forward),
    COURSE_RPC_ENDPOINT(lab05_harness::softmax_forward),
    COURSE_RPC_ENDPOINT(lab05_harness::conv_algorithm_report),
    COURSE_RPC_ENDPOINT(lab05_harness::lenet_forward),
    COURSE_RPC_ENDPOINT(lab05_harness::lenet_forward_batched),
    COURSE_RPC_ENDPOINT(lab05_harness::lenet_forward_captured),
    COURSE_RPC_ENDPOINT(lab05_harness::timing_prepare),
    COURSE_RPC_ENDPOINT(lab05_harness::timing_round))
