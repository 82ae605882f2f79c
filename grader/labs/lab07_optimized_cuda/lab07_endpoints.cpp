// Lab 07's RPC endpoints (a WORKER_SOURCE): the harness functions the tests may call in the
// sandboxed worker, where the student's code and the GPU are.
#include "rpc/endpoints.hpp"
#include "lab07_harness.hpp"

COURSE_RPC_ENDPOINTS(
    COURSE_RPC_ENDPOINT(lab07_harness::lenet_forward),
    COURSE_RPC_ENDPOINT(lab07_harness::lenet_forward_captured),
    COURSE_RPC_ENDPOINT(lab07_harness::call_lenet_with_arguments),
    COURSE_RPC_ENDPOINT(lab07_harness::timing_prepare),
    COURSE_RPC_ENDPOINT(lab07_harness::timing_round))
