// Worker side of lab01_conv2d: the functions of the interface header the test program may call
// (grader/rpc/endpoints.hpp). Linked into the worker with the student's code.
#include "labs/lab01_conv2d.hpp"
#include "rpc/endpoints.hpp"

COURSE_RPC_ENDPOINTS(
    COURSE_RPC_ENDPOINT(lab01::conv2d_output_shape),
    COURSE_RPC_ENDPOINT(lab01::conv2d_forward))
