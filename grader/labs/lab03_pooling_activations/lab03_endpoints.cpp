// Worker side of lab03_pooling_activations: the functions of the interface header the test program may call
// (grader/rpc/endpoints.hpp). Linked into the worker with the student's code.
#include "labs/lab03_pooling_activations.hpp"
#include "lab03_rpc.hpp"
#include "rpc/endpoints.hpp"

COURSE_RPC_ENDPOINTS(
    COURSE_RPC_ENDPOINT(lab03::pool2d_output_shape),
    COURSE_RPC_ENDPOINT(lab03::max_pool2d),
    COURSE_RPC_ENDPOINT(lab03::avg_pool2d),
    COURSE_RPC_ENDPOINT(lab03::global_avg_pool2d),
    COURSE_RPC_ENDPOINT(lab03::relu),
    COURSE_RPC_ENDPOINT(lab03::leaky_relu),
    COURSE_RPC_ENDPOINT(lab03::sigmoid),
    COURSE_RPC_ENDPOINT(lab03::tanh_activation),
    COURSE_RPC_ENDPOINT(lab03::softmax))
