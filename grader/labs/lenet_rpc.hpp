// The one RPC registration of lab04::FoldedLeNet, shared by every GPU lab whose harness takes a
// folded network (labs 05 and 06): a struct may be registered only once per program.
#pragma once

#include "labs/lab04_lenet_cpu.hpp"

#if __has_include("rpc/codec.hpp")
#include "rpc/codec.hpp"
COURSE_RPC_FIELDS(lab04::FoldedLeNet, conv1_weight, conv1_bias, conv2_weight, conv2_bias, fc1_weight, fc1_bias,
                  fc2_weight, fc2_bias, fc3_weight, fc3_bias)
#endif
