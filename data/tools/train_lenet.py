#!/usr/bin/env python3
"""Train the course's LeNet-5-BN on an IDX data set and export its weights.

Runs on the CPU with Debian's python3-torch (no GPU needed; a few minutes on 2 cores).

Exports, into --out-dir:
  lenet_<name>.safetensors          every parameter, batch-norm statistics NOT folded (lab 04 folds
                                    them), plus metadata: data set, test accuracy, BN epsilon, ...
  lenet_<name>_fixture.safetensors  "logits": PyTorch's logits of the first 100 test images and
                                    "labels": their labels -- the independent cross-check for the
                                    C++ forward passes
  lenet_<name>.json                 the same training record as readable JSON

The safetensors file is written by hand (8-byte little-endian header length, JSON header, raw
little-endian float32), so no extra Python package is needed.

Usage: train_lenet.py --name mnist --train-images ... --train-labels ... --test-images ...
                      --test-labels ... --epochs 20 --out-dir data/weights
"""
import argparse
import gzip
import json
import struct
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetensors_io import write_safetensors  # data/tools/safetensors_io.py

BN_EPS = 1e-5
FIXTURE_IMAGES = 100


class LeNet5BN(nn.Module):
    """Layer names match common/include/course/lenet.hpp: conv1, bn1, conv2, bn2, fc1, fc2, fc3."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.bn1 = nn.BatchNorm2d(6, eps=BN_EPS)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.bn2 = nn.BatchNorm2d(16, eps=BN_EPS)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise SystemExit(f"{path}: not an unsigned-byte IDX file")
    ndims = data[3]
    dims = struct.unpack(">" + "I" * ndims, data[4:4 + 4 * ndims])
    payload = data[4 + 4 * ndims:]
    count = 1
    for d in dims:
        count *= d
    if len(payload) != count:
        raise SystemExit(f"{path}: {len(payload)} data bytes, header says {count}")
    return torch.frombuffer(bytearray(payload), dtype=torch.uint8).reshape(dims)


def load(images_path, labels_path):
    images = read_idx(images_path).float().div(255.0).unsqueeze(1)  # [N,1,28,28] in [0,1], as in C++
    labels = read_idx(labels_path).long()
    return images, labels


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
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", required=True)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(2)
    train_x, train_y = load(args.train_images, args.train_labels)
    test_x, test_y = load(args.test_images, args.test_labels)
    print(f"{args.name}: {len(train_x)} train / {len(test_x)} test images")

    model = LeNet5BN()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    steps = args.epochs * ((len(train_x) + args.batch_size - 1) // args.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps)
    gen = torch.Generator().manual_seed(args.seed)
    start = time.time()
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(train_x), generator=gen)
        total = 0.0
        for i in range(0, len(order), args.batch_size):
            idx = order[i:i + args.batch_size]
            x = train_x[idx]
            # Small random shifts (+-2 px) make up for the small MNIST training split.
            dx, dy = torch.randint(-2, 3, (2,), generator=gen).tolist()
            x = torch.roll(x, shifts=(dy, dx), dims=(2, 3))
            loss = F.cross_entropy(model(x), train_y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss) * len(idx)
        _, correct = evaluate(model, test_x, test_y)
        print(f"epoch {epoch + 1:2d}/{args.epochs}  loss {total / len(train_x):.4f}  "
              f"test accuracy {correct / len(test_x):.4%}  ({time.time() - start:.0f} s)", flush=True)

    logits, correct = evaluate(model, test_x, test_y)
    record = {
        "dataset": args.name,
        "train_images": len(train_x),
        "test_images": len(test_x),
        "test_correct": correct,
        "test_accuracy": f"{correct / len(test_x):.6f}",
        "bn_eps": f"{BN_EPS:g}",
        "epochs": args.epochs,
        "seed": args.seed,
        "input_scaling": "pixel/255, no mean/std normalisation",
        "torch_version": torch.__version__,
        "format": "LeNet-5-BN, PyTorch state_dict names, BN statistics unfolded",
    }
    state = {k: v for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    write_safetensors(f"{args.out_dir}/lenet_{args.name}.safetensors", state, record)
    write_safetensors(f"{args.out_dir}/lenet_{args.name}_fixture.safetensors",
                      {"logits": logits[:FIXTURE_IMAGES], "labels": test_y[:FIXTURE_IMAGES].float()},
                      {"dataset": args.name, "what": f"PyTorch float32 logits of the first {FIXTURE_IMAGES} test images"})
    with open(f"{args.out_dir}/lenet_{args.name}.json", "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    print(f"{args.name}: test accuracy {correct}/{len(test_x)} = {correct / len(test_x):.4%}; weights in {args.out_dir}")


if __name__ == "__main__":
    main()
