// Worker side of lab04_lenet_cpu: the functions of the interface header the test program may call
// (grader/rpc/endpoints.hpp). Linked into the worker with the student's code.
#include "labs/lab04_lenet_cpu.hpp"
#include "lenet_rpc.hpp"
#include "rpc/endpoints.hpp"

COURSE_RPC_ENDPOINTS(
    COURSE_RPC_ENDPOINT(lab04::batchnorm_inference),
    COURSE_RPC_ENDPOINT(lab04::fold_batchnorm),
    COURSE_RPC_ENDPOINT(lab04::linear_forward),
    COURSE_RPC_ENDPOINT(lab04::lenet_forward),
    COURSE_RPC_ENDPOINT(lab04::fold_lenet),
    COURSE_RPC_ENDPOINT(lab04::lenet_forward_folded),
    COURSE_RPC_ENDPOINT(lab04::predicted_classes),
    COURSE_RPC_ENDPOINT(lab04::count_correct))
