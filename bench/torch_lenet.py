#!/usr/bin/env python3
"""The same folded LeNet-5-BN in PyTorch, timed the way bench/lab05_bench.cu times the cuDNN one.

    python3 bench/torch_lenet.py [repetitions=50]

Weights and images as lab05_bench picks them: the Fashion-MNIST test split
($COURSE_FASHION_MNIST_DIR, else /usr/share/datasets/fashion-mnist) with
data/weights/lenet_fashion_mnist.safetensors, else the course's MNIST split with lenet_mnist.
Batch-norm is folded into the convolutions here (float64, then float32), as lab 04 does it.
Timing: inputs already on the GPU, 5 warm-up passes, then each pass timed with CUDA events and the
median printed; TF32 is switched off (PyTorch allows it for cuDNN convolutions by default) so
that both programs compute in fp32. Rows: eager mode, and the same forward captured once into a
CUDA graph and replayed (one launch instead of about ten). Prints a note and exits 0 when torch
or a GPU is missing.
"""
import gzip
import json
import os
import statistics
import struct
import sys

try:
    import numpy as np
except ImportError:  # reported in main(); the GPU machine has numpy with torch
    np = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCHES = [1, 64, 1024, 10000]


def read_safetensors(path):
    """{name: float32 array} and the metadata of a safetensors file (8-byte header size, JSON, data)."""
    with open(path, "rb") as f:
        header_size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_size))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError(f"{path}: {name} is {info['dtype']}, expected F32")
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(info["shape"])
    return tensors, header.get("__metadata__", {})


def read_idx(path):
    """An unsigned-byte IDX file (optionally gzip-compressed) as a numpy array."""
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def find(folder, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return None


def load_data():
    """(images [N,1,28,28] float32 in [0,1], labels, weights file, description)."""
    fashion = os.environ.get("COURSE_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    images, labels = find(fashion, "t10k-images-idx3-ubyte"), find(fashion, "t10k-labels-idx1-ubyte")
    if images and labels:
        return read_idx(images), read_idx(labels), "lenet_fashion_mnist.safetensors", "Fashion-MNIST test split"
    mnist = os.environ.get("COURSE_MNIST_DIR", os.path.join(ROOT, "data", "generated", "mnist"))
    images, labels = find(mnist, "t10k-images-idx3-ubyte"), find(mnist, "t10k-labels-idx1-ubyte")
    if not (images and labels):
        raise FileNotFoundError("neither Fashion-MNIST nor the course's MNIST split was found")
    return read_idx(images), read_idx(labels), "lenet_mnist.safetensors", "MNIST test split (repeated)"


def fold(t, conv, bn, eps):
    """BN folded into the conv before it: w * scale, (b - mean) * scale + beta, scale = gamma / sqrt(var + eps)."""
    scale = t[bn + ".weight"].astype(np.float64) / np.sqrt(t[bn + ".running_var"].astype(np.float64) + eps)
    w = t[conv + ".weight"].astype(np.float64) * scale[:, None, None, None]
    b = (t[conv + ".bias"].astype(np.float64) - t[bn + ".running_mean"]) * scale + t[bn + ".bias"]
    return w.astype(np.float32), b.astype(np.float32)


def main():
    repetitions = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    if np is None:
        print("torch_lenet.py: numpy is not installed; nothing to compare")
        return 0
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch_lenet.py: PyTorch is not installed; nothing to compare")
        return 0
    if not torch.cuda.is_available():
        print("torch_lenet.py: no CUDA GPU visible to PyTorch; nothing to compare")
        return 0
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # measured algorithm choice, like lab05's default

    images, labels, weights_file, source = load_data()
    tensors, metadata = read_safetensors(os.path.join(ROOT, "data", "weights", weights_file))
    eps = float(metadata.get("bn_eps", 1e-5))
    dev = torch.device("cuda")
    p = {}
    p["c1w"], p["c1b"] = fold(tensors, "conv1", "bn1", eps)
    p["c2w"], p["c2b"] = fold(tensors, "conv2", "bn2", eps)
    for i in (1, 2, 3):
        p[f"f{i}w"], p[f"f{i}b"] = tensors[f"fc{i}.weight"], tensors[f"fc{i}.bias"]
    p = {k: torch.from_numpy(np.ascontiguousarray(v)).to(dev) for k, v in p.items()}

    def forward(x):
        x = F.max_pool2d(F.relu(F.conv2d(x, p["c1w"], p["c1b"], padding=2)), 2)
        x = F.max_pool2d(F.relu(F.conv2d(x, p["c2w"], p["c2b"])), 2)
        x = x.flatten(1)
        x = F.relu(F.linear(x, p["f1w"], p["f1b"]))
        x = F.relu(F.linear(x, p["f2w"], p["f2b"]))
        return F.linear(x, p["f3w"], p["f3b"])

    count = 10000
    reps = -(-count // images.shape[0])
    x_all = np.tile(images, (reps, 1, 1))[:count].astype(np.float32) / 255.0
    x_all = torch.from_numpy(x_all).reshape(count, 1, 28, 28).to(dev)

    with torch.inference_mode():
        predicted = forward(x_all).argmax(1).cpu().numpy()
        n = min(count, labels.shape[0])
        accuracy = float((predicted[:n] == labels[:n]).mean())
    print(f"torch_lenet.py: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN "
          f"{torch.backends.cudnn.version()}, {source}, {repetitions} timed passes per row")
    print(f"check: accuracy {100 * accuracy:.2f} % on {n} images ({weights_file} records "
          f"{metadata.get('test_accuracy', '?')})")

    def time_it(run):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(5):
            run()
        torch.cuda.synchronize()
        samples = []
        for _ in range(repetitions):
            start.record()
            run()
            stop.record()
            stop.synchronize()
            samples.append(start.elapsed_time(stop))
        return statistics.median(samples)

    print("\n| batch | variant                  | median ms | us / image | images / s |")
    print("|------:|--------------------------|----------:|-----------:|-----------:|")
    with torch.inference_mode():
        for batch in BATCHES:
            x = x_all[:batch].contiguous()
            eager = time_it(lambda: forward(x))
            # A CUDA graph records the ~10 kernel launches once and replays them as one.
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(3):
                    forward(x)
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = forward(x)
            graphed = time_it(graph.replay)
            del out
            for name, ms in (("PyTorch eager", eager), ("PyTorch CUDA graph", graphed)):
                print(f"| {batch:5d} | {name:<24s} | {ms:9.4f} | {1000 * ms / batch:10.3f} | {batch / (ms / 1000):10.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
