#!/usr/bin/env python3
"""The same folded LeNet-5-BN in PyTorch, timed the way bench/lab05_bench.cu times the cuDNN one.

    python3 bench/torch_lenet.py [repetitions=50]
    python3 bench/torch_lenet.py [repetitions] --csv FILE [--batch B[,B...]] [--host-batch N]
                                 [--fp32-peak-tflops T]

Weights and images as lab05_bench picks them: the Fashion-MNIST test split
($COURSE_FASHION_MNIST_DIR, else /usr/share/datasets/fashion-mnist) with
data/weights/lenet_fashion_mnist.safetensors, else the course's MNIST split with lenet_mnist.
Batch-norm is folded into the convolutions here (float64, then float32), as lab 04 does it.
Timing: inputs already on the GPU, 5 warm-up passes, then each pass timed with CUDA events and the
median printed; TF32 is switched off (PyTorch allows it for cuDNN convolutions by default) so
that both programs compute in fp32. Rows: eager mode, and the same forward captured once into a
CUDA graph and replayed (one launch instead of about ten). Prints a note and exits 0 when torch
or a GPU is missing.

--csv FILE appends the rows to FILE in the column format of build/bench/lab07_ladder (header
written when the file is new; bench/lab07_benchmark.py uses it):
  source,version,name,mode,batch,median_ms,min_ms,us_per_image,gflop_per_s,percent_fp32_peak,device
with source "pytorch", name "pytorch_eager" (mode "device") and "pytorch_graph" (mode "graph"),
and one more row, name "pytorch_eager" mode "host": --host-batch images (default 10,000) of uint8
pixels in pinned host memory -> labels in host memory (copy, convert to float / 255, forward,
argmax, copy back), timed with the wall clock around the whole call. --batch replaces the batch
list (default 1,64,1024,10000); --fp32-peak-tflops fills percent_fp32_peak (left empty without it).
"""
import argparse
import gzip
import json
import os
import statistics
import struct
import sys
import time

try:
    import numpy as np
except ImportError:  # reported in main(); the GPU machine has numpy with torch
    np = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCHES = [1, 64, 1024, 10000]
FLOPS_PER_IMAGE = 2 * 416520  # 2 FLOPs per multiply-add (course/lenet.hpp multiply_adds_per_image)
CSV_COLUMNS = ["source", "version", "name", "mode", "batch", "median_ms", "min_ms", "us_per_image",
               "gflop_per_s", "percent_fp32_peak", "device"]


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


def batch_list(text):
    """'1,10,100' -> [1, 10, 100]; every item a whole number >= 1."""
    try:
        batches = [int(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole numbers separated by commas, got '{text}'")
    if not batches or min(batches) < 1:
        raise argparse.ArgumentTypeError(f"every batch must be >= 1, got '{text}'")
    return batches


def parse_args():
    parser = argparse.ArgumentParser(description="The folded LeNet-5-BN in PyTorch, timed like lab05_bench.")
    parser.add_argument("repetitions", nargs="?", type=int, default=50, help="timed passes per row (default 50)")
    parser.add_argument("--csv", metavar="FILE", help="append the rows to FILE (lab07_ladder's CSV columns)")
    parser.add_argument("--batch", type=batch_list, default=BATCHES, metavar="B[,B...]",
                        help="batch sizes (default 1,64,1024,10000)")
    parser.add_argument("--host-batch", type=int, default=10000, metavar="N",
                        help="images of the host row (pinned uint8 -> labels on the host); only with --csv")
    parser.add_argument("--fp32-peak-tflops", type=float, default=None, metavar="T",
                        help="the GPU's FP32 peak, for the CSV's percent_fp32_peak column")
    args = parser.parse_args()
    if args.repetitions < 1:
        parser.error("repetitions must be >= 1")
    if args.host_batch < 1:
        parser.error("--host-batch must be >= 1")
    return args


class CsvRows:
    """Appends rows in lab07_ladder's format; a header first when the file is new or empty."""

    def __init__(self, path, device, peak_tflops):
        self.path, self.device, self.peak_tflops = path, device, peak_tflops
        if path and (not os.path.exists(path) or os.path.getsize(path) == 0):
            with open(path, "w") as f:
                f.write(",".join(CSV_COLUMNS) + "\n")

    def add(self, name, mode, batch, median_ms, min_ms):
        if not self.path:
            return
        gflops = FLOPS_PER_IMAGE * batch / (median_ms / 1000.0) / 1e9
        percent = f"{100.0 * gflops / (1000.0 * self.peak_tflops):.3f}" if self.peak_tflops else ""
        device = f'"{self.device}"' if "," in self.device else self.device
        fields = ["pytorch", "", name, mode, str(batch), f"{median_ms:.6f}", f"{min_ms:.6f}",
                  f"{1000.0 * median_ms / batch:.4f}", f"{gflops:.2f}", percent, device]
        with open(self.path, "a") as f:
            f.write(",".join(fields) + "\n")


def fp32_torch(script):
    """(torch, torch.nn.functional) set up for the course's comparisons -- TF32 off, so that cuDNN and
    cuBLAS compute in FP32 like our kernels, and cuDNN's algorithm chosen by measurement (like lab
    05's default) -- or None after saying why not (no numpy, no PyTorch, no GPU): then there is
    nothing to compare, which is not an error. `script` names the caller in that message."""
    if np is None:
        print(f"{script}: numpy is not installed; nothing to compare")
        return None
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print(f"{script}: PyTorch is not installed; nothing to compare")
        return None
    if not torch.cuda.is_available():
        print(f"{script}: no CUDA GPU visible to PyTorch; nothing to compare")
        return None
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    return torch, F


def main():
    args = parse_args()
    repetitions = args.repetitions
    found = fp32_torch("torch_lenet.py")
    if found is None:
        return 0
    torch, F = found

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
        """(median, min) in ms of `repetitions` passes, each timed with CUDA events."""
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
        return statistics.median(samples), min(samples)

    csv_rows = CsvRows(args.csv, torch.cuda.get_device_name(), args.fp32_peak_tflops)

    print("\n| batch | variant                  | median ms | us / image | images / s |")
    print("|------:|--------------------------|----------:|-----------:|-----------:|")
    with torch.inference_mode():
        for batch in args.batch:
            if batch <= count:
                x = x_all[:batch].contiguous()
            else:  # the images repeated up to the batch
                x = x_all.repeat(-(-batch // count), 1, 1, 1)[:batch].contiguous()
            eager, eager_min = time_it(lambda: forward(x))
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
            graphed, graphed_min = time_it(graph.replay)
            del out
            for name, ms in (("PyTorch eager", eager), ("PyTorch CUDA graph", graphed)):
                print(f"| {batch:5d} | {name:<24s} | {ms:9.4f} | {1000 * ms / batch:10.3f} | {batch / (ms / 1000):10.0f} |")
            csv_rows.add("pytorch_eager", "device", batch, eager, eager_min)
            csv_rows.add("pytorch_graph", "graph", batch, graphed, graphed_min)
        if args.csv:
            time_host(args.host_batch, images, labels, forward, dev, repetitions, csv_rows)
    if args.csv:
        print(f"\nCSV rows appended to {args.csv}")
    return 0


def time_host(batch, images, labels, forward, dev, repetitions, csv_rows):
    """End to end from pinned uint8 host memory to labels in host memory, wall clock per call."""
    import torch
    reps = -(-batch // images.shape[0])
    pixels = torch.from_numpy(np.ascontiguousarray(np.tile(images, (reps, 1, 1))[:batch])).pin_memory()
    predicted = torch.empty(batch, dtype=torch.int64).pin_memory()

    def classify():
        x = pixels.to(dev, non_blocking=True).float().div_(255.0).view(batch, 1, 28, 28)
        predicted.copy_(forward(x).argmax(1), non_blocking=True)
        torch.cuda.current_stream().synchronize()

    for _ in range(5):
        classify()
    samples = []
    for _ in range(repetitions):
        begin = time.perf_counter()
        classify()
        samples.append(1000.0 * (time.perf_counter() - begin))
    n = min(batch, labels.shape[0])
    accuracy = float((predicted.numpy()[:n] == labels[:n]).mean())
    ms = statistics.median(samples)
    print(f"\nhost: {batch} pinned uint8 images -> labels on the host: median {ms:.4f} ms "
          f"(min {min(samples):.4f}), accuracy {100 * accuracy:.2f} % on {n}")
    csv_rows.add("pytorch_eager", "host", batch, ms, min(samples))


if __name__ == "__main__":
    sys.exit(main())
