// Lab 08's RPC endpoints, part C (a WORKER_SOURCE): the block and network harness functions
// (lab08_mobilenet_harness.hpp) the tests may call in the sandboxed worker, and the speed gate's two.
#include "rpc/endpoints.hpp"
#include "lab08_mobilenet_harness.hpp"

COURSE_RPC_ENDPOINTS(
    COURSE_RPC_ENDPOINT(lab08_harness::inverted_residual_block),
    COURSE_RPC_ENDPOINT(lab08_harness::mobilenet_forward),
    COURSE_RPC_ENDPOINT(lab08_harness::mobilenet_forward_captured),
    COURSE_RPC_ENDPOINT(lab08_harness::call_block_with_arguments),
    COURSE_RPC_ENDPOINT(lab08_harness::call_mobilenet_with_arguments),
    COURSE_RPC_ENDPOINT(lab08_harness::timing_prepare),
    COURSE_RPC_ENDPOINT(lab08_harness::timing_round))
