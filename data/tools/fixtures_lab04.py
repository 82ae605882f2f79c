#!/usr/bin/env python3
"""Write lab 04's PyTorch cross-check fixture: grader/fixtures/lab04_layers.safetensors.

Run from the repository root with Debian's PyTorch:  /usr/bin/python3 data/tools/fixtures_lab04.py

Every tensor is float32; the generator is seeded, so the file is reproducible. Contents:
  bn_input [2,3,5,4], bn_gamma/bn_beta/bn_mean/bn_var [3]  -> bn_output: nn.BatchNorm2d in eval()
  conv_input [2,3,7,7], conv_weight [4,3,3,3], conv_bias [4], fold_gamma/fold_beta/fold_mean/
  fold_var [4]  -> conv_bn_output = bn(conv2d(x, padding=1)) computed unfolded, and
  fold_weight [4,3,3,3], fold_bias [4] = torch.nn.utils.fusion.fuse_conv_bn_weights(...)
  linear_input [3,7], linear_weight [5,7], linear_bias [5] -> linear_output = F.linear(...)
Both batch-norms use eps = 1e-3 (recorded in the metadata as "bn_eps"), not PyTorch's default,
so a solution that hard-codes 1e-5 cannot match.

The whole-network cross-check (LeNet logits) lives in data/weights/lenet_*_fixture.safetensors,
written by train_lenet.py.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.fusion import fuse_conv_bn_weights

from safetensors_io import write_safetensors  # data/tools/safetensors_io.py

EPS = 1e-3
OUT = "grader/fixtures/lab04_layers.safetensors"


def random_bn(channels, gen):
    """Batch-norm statistics far from the identity, so a missing term is visible."""
    bn = nn.BatchNorm2d(channels, eps=EPS)
    with torch.no_grad():
        bn.weight.copy_(torch.rand(channels, generator=gen) * 2.0 + 0.5)
        bn.bias.copy_(torch.randn(channels, generator=gen))
        bn.running_mean.copy_(torch.randn(channels, generator=gen))
        # Include a tiny variance: there eps matters most.
        var = torch.rand(channels, generator=gen) * 3.0 + 0.05
        var[0] = 2e-3
        bn.running_var.copy_(var)
    return bn.eval()


@torch.no_grad()
def main():
    gen = torch.Generator().manual_seed(404)
    t = {}

    bn = random_bn(3, gen)
    x = torch.randn(2, 3, 5, 4, generator=gen) * 2.0
    t.update(bn_input=x, bn_gamma=bn.weight, bn_beta=bn.bias, bn_mean=bn.running_mean, bn_var=bn.running_var,
             bn_output=bn(x))

    conv = nn.Conv2d(3, 4, 3, padding=1)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(4, 3, 3, 3, generator=gen) * 0.5)
        conv.bias.copy_(torch.randn(4, generator=gen))
    fbn = random_bn(4, gen)
    cx = torch.randn(2, 3, 7, 7, generator=gen)
    fw, fb = fuse_conv_bn_weights(conv.weight, conv.bias, fbn.running_mean, fbn.running_var, fbn.eps,
                                  fbn.weight, fbn.bias)
    t.update(conv_input=cx, conv_weight=conv.weight, conv_bias=conv.bias, fold_gamma=fbn.weight,
             fold_beta=fbn.bias, fold_mean=fbn.running_mean, fold_var=fbn.running_var,
             conv_bn_output=fbn(conv(cx)), fold_weight=fw, fold_bias=fb)

    lx = torch.randn(3, 7, generator=gen)
    lw = torch.randn(5, 7, generator=gen) * 0.5
    lb = torch.randn(5, generator=gen)
    t.update(linear_input=lx, linear_weight=lw, linear_bias=lb, linear_output=F.linear(lx, lw, lb))

    write_safetensors(OUT, t, {"bn_eps": f"{EPS:g}", "seed": 404, "torch_version": torch.__version__,
                               "made_by": "data/tools/fixtures_lab04.py"})
    print(f"wrote {OUT}: {len(t)} tensors")


if __name__ == "__main__":
    main()
