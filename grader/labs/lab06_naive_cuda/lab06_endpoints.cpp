// Lab 06's RPC endpoints (a WORKER_SOURCE): the harness functions the tests may call in the
// sandboxed worker, where the student's code and the GPU are.
#include "rpc/endpoints.hpp"
#include "lab06_harness.hpp"

COURSE_RPC_ENDPOINTS(
    COURSE_RPC_ENDPOINT(lab06_harness::conv2d_forward),
    COURSE_RPC_ENDPOINT(lab06_harness::relu_inplace),
    COURSE_RPC_ENDPOINT(lab06_harness::max_pool2d),
    COURSE_RPC_ENDPOINT(lab06_harness::linear_forward),
    COURSE_RPC_ENDPOINT(lab06_harness::argmax_rows),
    COURSE_RPC_ENDPOINT(lab06_harness::lenet_forward),
    COURSE_RPC_ENDPOINT(lab06_harness::lenet_forward_captured),
    COURSE_RPC_ENDPOINT(lab06_harness::call_with_arguments),
    COURSE_RPC_ENDPOINT(lab06_harness::call_lenet_with_arguments),
    COURSE_RPC_ENDPOINT(lab06_harness::timing_prepare),
    COURSE_RPC_ENDPOINT(lab06_harness::timing_round))
