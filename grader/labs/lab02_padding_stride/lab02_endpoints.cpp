// Worker side of lab02_padding_stride: the functions of the interface header the test program may call
// (grader/rpc/endpoints.hpp). Linked into the worker with the student's code.
#include "labs/lab02_padding_stride.hpp"
#include "lab02_rpc.hpp"
#include "rpc/endpoints.hpp"

COURSE_RPC_ENDPOINTS(
    COURSE_RPC_ENDPOINT(lab02::conv_output_size),
    COURSE_RPC_ENDPOINT(lab02::conv2d_output_shape),
    COURSE_RPC_ENDPOINT(lab02::conv2d_forward),
    COURSE_RPC_ENDPOINT(lab02::tf_padding),
    COURSE_RPC_ENDPOINT(lab02::tf_mode_for),
    COURSE_RPC_ENDPOINT(lab02::nchw_offset),
    COURSE_RPC_ENDPOINT(lab02::nhwc_offset),
    COURSE_RPC_ENDPOINT(lab02::nchw_to_nhwc),
    COURSE_RPC_ENDPOINT(lab02::nhwc_to_nchw))
