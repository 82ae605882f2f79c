#!/usr/bin/env python3
"""Train the course's small MobileNetV2 on Fashion-MNIST and export its weights (lab 08's network).

Lab 08 runs a real network's layers -- 3x3 and 1x1 convolutions with tens to hundreds of
channels, depthwise convolutions, inverted residual blocks -- instead of LeNet's 5x5 ones. This is
MobileNetV2 (Sandler et al., 2018) cut down for 28x28 grey images:

  stem      conv 3x3, 1 -> 16, stride 1, pad 1, BN, ReLU6                         28 x 28
  blocks    inverted residuals (expansion t, output channels c, repeats n, stride s of the first):
            t=1 c=16 n=1 s=1 | t=6 c=24 n=2 s=2 | t=6 c=32 n=2 s=2 | t=6 c=64 n=2 s=1
            each: [1x1 expand to t*in, BN, ReLU6 (absent when t = 1)] -> depthwise 3x3 (stride s,
            pad 1), BN, ReLU6 -> 1x1 project to c, BN (linear: no activation) -> + input when the
            stride is 1 and in == c                                               28 -> 14 -> 7 -> 7
  head      conv 1x1, 64 -> 256, BN, ReLU6 -> global average pool 7 x 7 -> linear 256 -> 10

Convolutions have no bias (the BN after each one has it). Dropout (p = 0.2) before the linear layer
acts only while training. Inputs are pixel/255, like LeNet's.

Exports, into --out-dir:
  mobilenet_<name>.safetensors          every parameter, batch-norm statistics NOT folded, names as
                                        listed above (stem.conv.weight, stem.bn.weight,
                                        blocks.3.expand.conv.weight, blocks.3.depthwise.bn.running_var,
                                        blocks.3.project.conv.weight, head.conv.weight,
                                        classifier.weight, classifier.bias, ...), plus metadata: the
                                        architecture as JSON, data set, test accuracy, BN epsilon
  mobilenet_<name>_fixture.safetensors  "logits": the FP32 logits of the first 100 test images and
                                        "labels": their labels -- the independent cross-check for the
                                        C++ forward passes
  mobilenet_<name>.json                 the training record as readable JSON

Runs on a CUDA GPU when PyTorch has one (about a minute on an H100), else on the CPU (slow: tens of
minutes on 2 cores). TF32 is off, so the fixture's logits are FP32 on either device.

Usage: train_mobilenet.py --name fashion_mnist --train-images ... --train-labels ...
                          --test-images ... --test-labels ... --epochs 30 --out-dir data/weights
"""
import argparse
import json
import os
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS, before torch loads

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetensors_io import write_safetensors  # data/tools/safetensors_io.py
from train_lenet import load  # the same IDX reader and pixel/255 scaling as LeNet's

BN_EPS = 1e-5
FIXTURE_IMAGES = 100
STEM_CHANNELS = 16
# (expansion t, output channels c, repeats n, stride s of the first repeat): MobileNetV2's table,
# shortened for 28x28 inputs.
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 2, 2), (6, 64, 2, 1)]
HEAD_CHANNELS = 256
CLASSES = 10


class ConvBN(nn.Module):
    """conv (no bias) + BN, with ReLU6 unless linear: the unit every layer below is made of."""

    def __init__(self, cin, cout, kernel, stride=1, groups=1, relu6=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=BN_EPS)
        self.relu6 = relu6

    def forward(self, x):
        x = self.bn(self.conv(x))
        return F.relu6(x) if self.relu6 else x


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, expansion, stride):
        super().__init__()
        hidden = cin * expansion
        self.expand = ConvBN(cin, hidden, 1) if expansion != 1 else None
        self.depthwise = ConvBN(hidden, hidden, 3, stride, groups=hidden)
        self.project = ConvBN(hidden, cout, 1, relu6=False)  # the linear bottleneck
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.expand(x) if self.expand is not None else x
        y = self.project(self.depthwise(y))
        return x + y if self.residual else y


class MobileNetV2Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = ConvBN(1, STEM_CHANNELS, 3)
        blocks, cin = [], STEM_CHANNELS
        for t, c, n, s in BLOCKS:
            for i in range(n):
                blocks.append(InvertedResidual(cin, c, t, s if i == 0 else 1))
                cin = c
        self.blocks = nn.Sequential(*blocks)
        self.head = ConvBN(cin, HEAD_CHANNELS, 1)
        self.dropout = nn.Dropout(0.2)
        self.classifier = nn.Linear(HEAD_CHANNELS, CLASSES)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.classifier(self.dropout(x.mean((2, 3))))


def augment(x, gen):
    """Each image shifted by up to 2 pixels (zero fill) and flipped left-right half of the time:
    clothes look the same mirrored, and the shifts make up for the centred, tightly cropped data."""
    n = x.shape[0]
    padded = F.pad(x, (2, 2, 2, 2))
    oy = torch.randint(0, 5, (n,), generator=gen, device="cpu").to(x.device)
    ox = torch.randint(0, 5, (n,), generator=gen, device="cpu").to(x.device)
    r = torch.arange(28, device=x.device)
    rows = (oy[:, None] + r)[:, :, None]
    cols = (ox[:, None] + r)[:, None, :]
    shifted = padded[torch.arange(n, device=x.device)[:, None, None], 0, rows, cols].unsqueeze(1)
    flip = (torch.rand(n, generator=gen) < 0.5).to(x.device)[:, None, None, None]
    return torch.where(flip, shifted.flip(3), shifted)


@torch.no_grad()
def evaluate(model, images, labels):
    model.eval()
    logits = torch.cat([model(images[i:i + 1000]) for i in range(0, len(images), 1000)])
    return logits, int((logits.argmax(1) == labels).sum())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--name", required=True)
    p.add_argument("--train-images", required=True)
    p.add_argument("--train-labels", required=True)
    p.add_argument("--test-images", required=True)
    p.add_argument("--test-labels", required=True)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=4e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="cuda, cpu or auto (cuda when PyTorch has one)")
    p.add_argument("--out-dir", required=True)
    args = p.parse_args()

    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if args.device == "auto" else args.device))
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False  # FP32 products, so the fixture is FP32 logits
    torch.backends.cudnn.allow_tf32 = False
    if device.type == "cpu":
        torch.set_num_threads(os.cpu_count() or 2)
    train_x, train_y = (t.to(device) for t in load(args.train_images, args.train_labels))
    test_x, test_y = (t.to(device) for t in load(args.test_images, args.test_labels))
    print(f"{args.name}: {len(train_x)} train / {len(test_x)} test images on {device}", flush=True)

    model = MobileNetV2Small().to(device)
    parameters = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=5e-4)
    steps = args.epochs * ((len(train_x) + args.batch_size - 1) // args.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps)
    gen = torch.Generator().manual_seed(args.seed)
    start = time.time()
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(train_x), generator=gen).to(device)
        total = 0.0
        for i in range(0, len(order), args.batch_size):
            idx = order[i:i + args.batch_size]
            loss = F.cross_entropy(model(augment(train_x[idx], gen)), train_y[idx], label_smoothing=0.1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        _, correct = evaluate(model, test_x, test_y)
        print(f"epoch {epoch + 1:2d}/{args.epochs}  loss {total / len(train_x):.4f}  "
              f"test accuracy {correct / len(test_x):.4%}  ({time.time() - start:.0f} s)", flush=True)

    logits, correct = evaluate(model, test_x, test_y)
    architecture = {"stem_channels": STEM_CHANNELS, "blocks": BLOCKS, "head_channels": HEAD_CHANNELS,
                    "classes": CLASSES, "activation": "relu6", "input": [1, 28, 28]}
    record = {
        "dataset": args.name,
        "train_images": len(train_x),
        "test_images": len(test_x),
        "test_correct": correct,
        "test_accuracy": f"{correct / len(test_x):.6f}",
        "parameters": parameters,
        "bn_eps": f"{BN_EPS:g}",
        "epochs": args.epochs,
        "seed": args.seed,
        "trained_on": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "training_seconds": round(time.time() - start, 1),
        "input_scaling": "pixel/255, no mean/std normalisation",
        "torch_version": torch.__version__,
        "architecture": json.dumps(architecture),
        "format": "MobileNetV2-small, names as in data/tools/train_mobilenet.py, BN statistics unfolded",
    }
    state = {k: v.cpu() for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    os.makedirs(args.out_dir, exist_ok=True)
    write_safetensors(f"{args.out_dir}/mobilenet_{args.name}.safetensors", state, record)
    write_safetensors(f"{args.out_dir}/mobilenet_{args.name}_fixture.safetensors",
                      {"logits": logits[:FIXTURE_IMAGES].cpu(), "labels": test_y[:FIXTURE_IMAGES].float().cpu()},
                      {"dataset": args.name, "what": f"PyTorch float32 logits of the first {FIXTURE_IMAGES} test images"})
    with open(f"{args.out_dir}/mobilenet_{args.name}.json", "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    print(f"{args.name}: {parameters} parameters, test accuracy {correct}/{len(test_x)} = "
          f"{correct / len(test_x):.4%}; weights in {args.out_dir}")


if __name__ == "__main__":
    main()
