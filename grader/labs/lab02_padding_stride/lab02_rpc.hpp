// How lab 02's parameter structs travel between the test program and the worker.
#pragma once

#include "labs/lab02_padding_stride.hpp"
#include "rpc/codec.hpp"

COURSE_RPC_FIELDS(lab02::Conv2dParams, pad_top, pad_bottom, pad_left, pad_right, stride_h, stride_w, dilation_h,
                  dilation_w)
COURSE_RPC_FIELDS(lab02::Padding1d, before, after)
