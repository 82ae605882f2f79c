// How lab 03's parameter struct travels between the test program and the worker.
#pragma once

#include "labs/lab03_pooling_activations.hpp"
#include "rpc/codec.hpp"

COURSE_RPC_FIELDS(lab03::Pool2dParams, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, count_include_pad)
