#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus: small slices of the course's real data files.

    common/fuzz/make_seed_corpus.py [REPO_ROOT]

corpus/idx/          IDX files: the first images/labels of the converted MNIST split and of
                     Fashion-MNIST, raw and gzip-compressed (fuzz_idx, fuzz_idx_gzip)
corpus/safetensors/  the LeNet weights and a PyTorch fixture cut down to a few tensors, with the
                     real header layout and metadata (fuzz_safetensors)

Slices keep the corpus small (committed, a few KB) while starting the fuzzers from the exact
byte layouts the course reads. The output is deterministic (gzip mtime 0), so re-running it
changes nothing unless the data changed.
"""
import gzip
import json
import pathlib
import struct
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
OUT = pathlib.Path(__file__).resolve().parent / "corpus"
FASHION = pathlib.Path("/usr/share/datasets/fashion-mnist")


def idx_slice(data: bytes, count: int) -> bytes:
    """The first `count` items of an IDX file, with the first extent rewritten to match."""
    ndims = data[3]
    dims = list(struct.unpack(">" + "I" * ndims, data[4:4 + 4 * ndims]))
    item = 1
    for d in dims[1:]:
        item *= d
    dims[0] = count
    header = data[:4] + struct.pack(">" + "I" * ndims, *dims)
    start = 4 + 4 * ndims
    return header + data[start:start + count * item]


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def safetensors_slice(data: bytes, keep) -> bytes:
    """A safetensors file with only the tensors named in `keep` (and the metadata)."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out_header, out_body = {}, b""
    for name in keep:
        entry = header[name]
        begin, end = entry["data_offsets"]
        out_header[name] = {"dtype": entry["dtype"], "shape": entry["shape"],
                            "data_offsets": [len(out_body), len(out_body) + end - begin]}
        out_body += body[begin:end]
    if "__metadata__" in header:
        out_header["__metadata__"] = header["__metadata__"]
    text = json.dumps(out_header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + out_body


def write(path: pathlib.Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    print(f"{path.relative_to(OUT.parent)}: {len(data)} bytes")


def main() -> None:
    mnist = ROOT / "data" / "generated" / "mnist"
    images = (mnist / "test-images-idx3-ubyte").read_bytes()
    labels = (mnist / "test-labels-idx1-ubyte").read_bytes()
    write(OUT / "idx" / "mnist-images-2", idx_slice(images, 2))
    write(OUT / "idx" / "mnist-labels-10", idx_slice(labels, 10))
    write(OUT / "idx" / "mnist-images-1.gz", gz(idx_slice(images, 1)))
    write(OUT / "idx" / "mnist-labels-10.gz", gz(idx_slice(labels, 10)))
    if FASHION.is_dir():
        fashion = gzip.decompress((FASHION / "t10k-images-idx3-ubyte.gz").read_bytes())
        write(OUT / "idx" / "fashion-images-1.gz", gz(idx_slice(fashion, 1)))

    weights = ROOT / "data" / "weights"
    lenet = (weights / "lenet_mnist.safetensors").read_bytes()
    write(OUT / "safetensors" / "lenet-conv1-bn1",
          safetensors_slice(lenet, ["conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias",
                                    "bn1.running_mean", "bn1.running_var", "fc3.bias"]))
    fixture = (weights / "lenet_mnist_fixture.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", fixture[:8])
    names = [k for k in json.loads(fixture[8:8 + n]) if k != "__metadata__"]
    write(OUT / "safetensors" / "fixture-slice", safetensors_slice(fixture, names[-1:]))


if __name__ == "__main__":
    main()
