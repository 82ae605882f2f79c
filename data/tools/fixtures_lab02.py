#!/usr/bin/env python3
"""Writes the PyTorch fixtures of lab 02 (padding, stride, dilation, TF SAME, NCHW/NHWC).

Run with Debian's PyTorch:  /usr/bin/python3 data/tools/fixtures_lab02.py
Output: grader/fixtures/lab02_padding_stride.safetensors (deterministic: fixed seed).

Contents (all F32):
  conv<i>_input [N,C,H,W], conv<i>_weight [K,C,R,S], conv<i>_bias [K], conv<i>_output,
  conv<i>_params [8] = pad_top, pad_bottom, pad_left, pad_right, stride_h, stride_w,
                       dilation_h, dilation_w
      F.pad (zero, possibly asymmetric) followed by F.conv2d(stride, dilation).
  same<i>_input / _weight / _bias / _output, same<i>_params [2] = dilation_h, dilation_w
      F.conv2d(padding="same") with stride 1 -- PyTorch's own SAME, which the C++ test
      reproduces with lab02::tf_padding + conv2d_forward.
  tf_same_table [M, 6] rows of in, kernel, stride, dilation, pad_before, pad_after
      TensorFlow's SAME rule, found by searching for the smallest total padding that gives
      ceil(in / stride) outputs (the definition), checked here against the modular formula of
      TensorFlow's documentation and, for stride 1, against PyTorch's padding="same".
  layout_nchw [N,C,H,W], layout_nhwc = layout_nchw.permute(0, 2, 3, 1)
"""
import os
import warnings

import torch
import torch.nn.functional as F

from safetensors_io import write_safetensors  # data/tools/safetensors_io.py

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(REPO, "grader", "fixtures", "lab02_padding_stride.safetensors")


def uniform(*shape):
    return torch.rand(*shape) * 2 - 1


# (input shape, weight shape, (top, bottom, left, right), (stride_h, stride_w), (dil_h, dil_w))
CONV_CASES = [
    ((2, 3, 9, 10), (4, 3, 3, 2), (1, 2, 0, 3), (2, 1), (1, 2)),   # every side different
    ((1, 2, 6, 7), (3, 2, 3, 3), (2, 0, 1, 0), (1, 1), (1, 1)),    # top/left padding only
    ((2, 2, 11, 13), (2, 2, 2, 1), (0, 1, 1, 0), (3, 4), (1, 1)),  # stride larger than the kernel
    ((1, 3, 10, 12), (2, 3, 3, 4), (2, 2, 1, 1), (1, 2), (3, 2)),  # large dilation
    ((1, 1, 28, 28), (6, 1, 5, 5), (2, 2, 2, 2), (1, 1), (1, 1)),  # LeNet's conv1: 28 -> 28
    ((1, 4, 5, 5), (3, 4, 1, 1), (1, 1, 1, 1), (2, 2), (1, 1)),    # 1x1 kernel on padding
]

# (input shape, weight shape, (dil_h, dil_w)) for PyTorch's padding="same" (stride 1 only)
SAME_CASES = [
    ((1, 2, 7, 8), (2, 2, 4, 3), (1, 1)),  # even kernel height: odd total padding
    ((2, 1, 9, 6), (3, 1, 3, 2), (2, 3)),  # dilation, even kernel width
    ((1, 1, 6, 6), (1, 1, 5, 5), (1, 1)),
]


def same_total_by_search(n, k, s, d):
    """Smallest total padding for which a VALID convolution gives ceil(n / s) outputs."""
    want = -(-n // s)
    k_eff = d * (k - 1) + 1
    t = 0
    while (n + t - k_eff) // s + 1 < want:
        t += 1
    return t


def same_total_tf_docs(n, k, s, d):
    k_eff = d * (k - 1) + 1
    return max(k_eff - s, 0) if n % s == 0 else max(k_eff - n % s, 0)


def main():
    # PyTorch warns that an even kernel under padding="same" needs a padded copy: expected here.
    warnings.filterwarnings("ignore", message="Using padding='same'")
    torch.manual_seed(2024)
    tensors = {}

    for i, (xs, ws, pad, stride, dil) in enumerate(CONV_CASES):
        x, w, b = uniform(*xs), uniform(*ws), uniform(ws[0])
        top, bottom, left, right = pad
        y = F.conv2d(F.pad(x, (left, right, top, bottom)), w, b, stride=stride, dilation=dil)
        tensors[f"conv{i}_input"] = x
        tensors[f"conv{i}_weight"] = w
        tensors[f"conv{i}_bias"] = b
        tensors[f"conv{i}_output"] = y
        tensors[f"conv{i}_params"] = torch.tensor([*pad, *stride, *dil], dtype=torch.float32)

    for i, (xs, ws, dil) in enumerate(SAME_CASES):
        x, w, b = uniform(*xs), uniform(*ws), uniform(ws[0])
        y = F.conv2d(x, w, b, padding="same", dilation=dil)
        # The same result from an explicit pad with the extra pixel at the bottom/right.
        th = same_total_by_search(xs[2], ws[2], 1, dil[0])
        tw = same_total_by_search(xs[3], ws[3], 1, dil[1])
        explicit = F.conv2d(F.pad(x, (tw // 2, tw - tw // 2, th // 2, th - th // 2)), w, b, dilation=dil)
        assert torch.allclose(y, explicit, atol=1e-6), "PyTorch 'same' does not put the extra pixel last"
        tensors[f"same{i}_input"] = x
        tensors[f"same{i}_weight"] = w
        tensors[f"same{i}_bias"] = b
        tensors[f"same{i}_output"] = y
        tensors[f"same{i}_params"] = torch.tensor(list(dil), dtype=torch.float32)

    rows = []
    for n in range(1, 11):
        for k in range(1, 6):
            for s in range(1, 5):
                for d in range(1, 4):
                    total = same_total_by_search(n, k, s, d)
                    assert total == same_total_tf_docs(n, k, s, d), (n, k, s, d)
                    before, after = total // 2, total - total // 2
                    assert (n + total - d * (k - 1) - 1) // s + 1 == -(-n // s)
                    if s == 1:  # PyTorch implements SAME for stride 1: compare its output shape and values
                        x = uniform(1, 1, 1, n)
                        w = uniform(1, 1, 1, k)
                        y = F.conv2d(x, w, padding="same", dilation=(1, d))
                        explicit = F.conv2d(F.pad(x, (before, after)), w, dilation=(1, d))
                        assert y.shape == explicit.shape and torch.allclose(y, explicit, atol=1e-6), (n, k, d)
                    rows.append([n, k, s, d, before, after])
    tensors["tf_same_table"] = torch.tensor(rows, dtype=torch.float32)

    x = uniform(2, 3, 4, 5)
    tensors["layout_nchw"] = x
    tensors["layout_nhwc"] = x.permute(0, 2, 3, 1).contiguous()

    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    write_safetensors(OUT, tensors, {"generator": "data/tools/fixtures_lab02.py", "torch": torch.__version__,
                                     "seed": 2024})
    print(f"wrote {OUT}: {len(tensors)} tensors, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
