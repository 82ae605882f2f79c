#!/usr/bin/python3
"""Writes grader/fixtures/lab01_conv2d.safetensors: inputs, weights, biases and PyTorch's F.conv2d
outputs (stride 1, no padding) for lab 01's cross-check.

Run with Debian's Python, which has PyTorch:  /usr/bin/python3 data/tools/fixtures_lab01.py
The seeds are fixed, so running it again rewrites the same values.

Each case <name> stores four F32 tensors: <name>.input [N,C,H,W], <name>.weight [K,C,R,S],
<name>.bias [K] and <name>.output [N,K,H-R+1,W-S+1]. The test grader/labs/lab01_conv2d/ lists
the case names; add a case here and there together.
"""
import os

import torch
import torch.nn.functional as F

from safetensors_io import write_safetensors  # data/tools/safetensors_io.py

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_PATH = os.path.join(REPO, "grader", "fixtures", "lab01_conv2d.safetensors")


def lecture_single():
    """The lecture's first worked example: one 4x4 image, one 3x3 filter, no bias."""
    x = torch.tensor([[1, 2, 0, 1], [0, 1, 3, 2], [2, 1, 0, 1], [1, 0, 2, 3]], dtype=torch.float32)
    w = torch.tensor([[1, 0, -1], [2, 1, 0], [0, -1, 1]], dtype=torch.float32)
    return x.view(1, 1, 4, 4), w.view(1, 1, 3, 3), torch.zeros(1)


def lecture_two_channel():
    """The lecture's second worked example: two 3x3 channels, one 2x2x2 filter, bias 0.5."""
    x = torch.tensor([[[1, 0, 2], [3, 1, 0], [0, 2, 1]], [[2, 1, 0], [0, 1, 2], [1, 0, 1]]], dtype=torch.float32)
    w = torch.tensor([[[1, 2], [0, -1]], [[0, 1], [-1, 1]]], dtype=torch.float32)
    return x.view(1, 2, 3, 3), w.view(1, 2, 2, 2), torch.tensor([0.5])


def random_case(seed, n, c, h, w, k, r, s):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, c, h, w, generator=g) * 2 - 1
    wt = torch.rand(k, c, r, s, generator=g) * 2 - 1
    b = torch.rand(k, generator=g) * 2 - 1
    return x, wt, b


def main():
    torch.set_num_threads(1)
    cases = {
        "lecture_single": lecture_single(),
        "lecture_two_channel": lecture_two_channel(),
        # non-square image and kernel, a batch of two: catches swapped H/W or R/S indexing
        "batch_nonsquare": random_case(101, n=2, c=3, h=7, w=9, k=4, r=3, s=2),
        # the shape of LeNet's conv2 (6 -> 16 channels, 5x5 kernel, 14x14 input)
        "lenet_conv2": random_case(102, n=1, c=6, h=14, w=14, k=16, r=5, s=5),
        # 1x1 kernel: a per-pixel mix of channels
        "pointwise": random_case(103, n=2, c=5, h=4, w=3, k=3, r=1, s=1),
        # kernel as large as the image: a single output pixel per filter
        "full_kernel": random_case(104, n=1, c=2, h=5, w=4, k=3, r=5, s=4),
    }
    tensors = {}
    for name, (x, w, b) in cases.items():
        y = F.conv2d(x, w, b, stride=1, padding=0)
        tensors[f"{name}.input"] = x
        tensors[f"{name}.weight"] = w
        tensors[f"{name}.bias"] = b
        tensors[f"{name}.output"] = y
    os.makedirs(os.path.dirname(OUT_PATH), exist_ok=True)
    write_safetensors(OUT_PATH, tensors, {
        "made_by": "data/tools/fixtures_lab01.py",
        "torch_version": torch.__version__,
        "cases": ",".join(cases),
    })
    print(f"wrote {OUT_PATH} ({os.path.getsize(OUT_PATH)} bytes, {len(cases)} cases)")


if __name__ == "__main__":
    main()
