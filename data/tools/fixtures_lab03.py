#!/usr/bin/env python3
"""Writes grader/fixtures/lab03_pytorch.safetensors: PyTorch's own results for lab 03.

The lab 03 tests load this file to check the golden reference (and the student's code) against
an implementation that has nothing in common with ours: F.max_pool2d, F.avg_pool2d (with and
without count_include_pad), global average pooling, leaky_relu, sigmoid, tanh and softmax.

Run from the repository root with Debian's PyTorch:
    /usr/bin/python3 data/tools/fixtures_lab03.py
The seed is fixed, so rerunning it rewrites the same file. The pooling parameters below are
repeated in grader/labs/lab03_pooling_activations/fixture_tests.cpp (and stored in the file's
metadata): change both together.
"""
import os

import torch
import torch.nn.functional as F

from safetensors_io import write_safetensors  # data/tools/safetensors_io.py

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "grader", "fixtures", "lab03_pytorch.safetensors")


def main():
    torch.manual_seed(2303)
    t = {}

    # Pooling input: odd, non-square planes so that windows hit the bottom/right borders unevenly.
    x = torch.randn(2, 3, 9, 11)
    t["pool.input"] = x
    # A: square 3x3 window, stride 2, padding 1 (overlapping windows, padded borders).
    t["max.a"] = F.max_pool2d(x, kernel_size=3, stride=2, padding=1)
    t["avg.a.include_pad"] = F.avg_pool2d(x, kernel_size=3, stride=2, padding=1, count_include_pad=True)
    t["avg.a.exclude_pad"] = F.avg_pool2d(x, kernel_size=3, stride=2, padding=1, count_include_pad=False)
    # B: non-square 2x3 window, stride (1, 2), padding (1, 1): kernel != stride per axis.
    t["max.b"] = F.max_pool2d(x, kernel_size=(2, 3), stride=(1, 2), padding=(1, 1))
    t["avg.b.include_pad"] = F.avg_pool2d(x, kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), count_include_pad=True)
    t["avg.b.exclude_pad"] = F.avg_pool2d(x, kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), count_include_pad=False)
    # Global average pooling (what nn.AdaptiveAvgPool2d(1) computes).
    t["global_avg"] = F.adaptive_avg_pool2d(x, 1)

    # All-negative input with padding: PyTorch pads max pooling with -inf, so 0 never appears.
    neg = -(torch.rand(1, 2, 5, 6) * 4 + 0.5)
    t["neg.input"] = neg
    t["neg.max"] = F.max_pool2d(neg, kernel_size=3, stride=2, padding=1)

    # Activations: a spread of ordinary values plus the saturating extremes.
    a = torch.cat([torch.randn(60) * 4,
                   torch.tensor([-1000.0, -100.0, -89.0, -20.0, -1e-3, 0.0, 1e-3, 20.0, 89.0, 100.0, 1000.0])])
    t["act.input"] = a
    t["act.relu"] = F.relu(a)
    t["act.leaky_relu_0.1"] = F.leaky_relu(a, negative_slope=0.1)
    t["act.sigmoid"] = torch.sigmoid(a)
    t["act.tanh"] = torch.tanh(a)

    # Softmax rows: ordinary logits, then the rows that break the naive formula in float32.
    logits = torch.randn(6, 10) * 3
    logits[3] = torch.arange(10, dtype=torch.float32) + 1000.0  # exp overflows without the shift
    logits[4] = -1000.0 - torch.arange(10, dtype=torch.float32)  # exp underflows to 0 without it
    logits[5] = 0.0
    logits[5, 7] = 500.0  # a huge gap: one-hot
    t["softmax.logits"] = logits
    t["softmax.probabilities"] = F.softmax(logits, dim=1)

    meta = {
        "generator": "data/tools/fixtures_lab03.py",
        "torch": torch.__version__,
        "seed": 2303,
        "pool_a": "kernel 3x3, stride 2x2, pad 1x1",
        "pool_b": "kernel 2x3, stride 1x2, pad 1x1",
        "neg": "max pool kernel 3x3, stride 2x2, pad 1x1",
        "leaky_relu": "negative_slope 0.1",
    }
    write_safetensors(OUT, t, meta)
    print("wrote", os.path.normpath(OUT), {k: list(v.shape) for k, v in t.items()})


if __name__ == "__main__":
    main()
