#!/usr/bin/env python3
"""Lab 08's Fashion-MNIST MobileNetV2 in PyTorch, timed the way bench/lab08_mobilenet.cu times ours.

    python3 bench/torch_mobilenet.py [--repetitions R] [--csv FILE] [--ours LOGITS] [--batch B[,B...]]

The network is built from data/weights/mobilenet_fashion_mnist.safetensors with every batch-norm
folded into its convolution (float64, then float32, as the golden fold does), so PyTorch runs the
same arithmetic as the lab: conv, + bias, ReLU6, depthwise conv (groups = channels), ...
Images: the Fashion-MNIST test split ($COURSE_FASHION_MNIST_DIR, else /usr/share/datasets/fashion-mnist),
all 10,000 on the GPU before timing. TF32 is off for cuDNN and matmuls (PyTorch allows it for
convolutions by default), cudnn.benchmark on (measured algorithm choice, like our cuDNN version).
Rows: eager, and the forward captured once into a CUDA graph and replayed; batch 1 and 10,000.
Timing: 5 warm-up passes, then each pass timed with CUDA events, L2 flushed before each (as
course::GpuTimer does), median reported.

--ours FILE: the solution's logits of the 10,000 images (float32 [10000,10], lab08_mobilenet
--logits) -- the maximum difference from PyTorch's is printed. --csv FILE appends rows in
lab08_mobilenet's format (workload,version,batch,median_ms,min_ms,images_per_s,x_cudnn,device),
x_cudnn taken from the file's "cudnn" row of the same workload and batch when there is one.
Prints a note and exits 0 when numpy, torch or a GPU is missing.
"""
import argparse
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_lenet import ROOT, batch_list, find, fp32_torch, read_idx, read_safetensors  # noqa: E402

try:
    import numpy as np
except ImportError:
    np = None

WORKLOAD = "mobilenet_fmnist"
STRIDES = [1, 2, 1, 2, 1, 1, 1]  # course/mobilenet.hpp: blocks 0..6
COLUMNS = ["workload", "version", "batch", "median_ms", "min_ms", "images_per_s", "x_cudnn", "device"]


def fold(t, prefix, eps):
    """prefix.conv.weight and prefix.bn.* -> (weight * scale, beta - mean * scale), scale = gamma / sqrt(var + eps)."""
    scale = t[prefix + ".bn.weight"].astype(np.float64) / np.sqrt(t[prefix + ".bn.running_var"].astype(np.float64) + eps)
    w = t[prefix + ".conv.weight"].astype(np.float64) * scale[:, None, None, None]
    b = t[prefix + ".bn.bias"].astype(np.float64) - t[prefix + ".bn.running_mean"].astype(np.float64) * scale
    return w.astype(np.float32), b.astype(np.float32)


def build(tensors, eps, torch, dev):
    """The folded parameters on the GPU: {'stem': (w, b), 'blocks': [dict], 'head': (w, b), 'classifier': (w, b)}."""
    def gpu(*arrays):
        return tuple(torch.from_numpy(np.array(a, dtype=np.float32)).to(dev) for a in arrays)  # a writable copy

    net = {"stem": gpu(*fold(tensors, "stem", eps)), "blocks": []}
    for i, stride in enumerate(STRIDES):
        p = f"blocks.{i}"
        block = {"stride": stride}
        if p + ".expand.conv.weight" in tensors:  # t = 1 blocks have no expansion
            block["expand"] = gpu(*fold(tensors, p + ".expand", eps))
        block["depthwise"] = gpu(*fold(tensors, p + ".depthwise", eps))
        block["project"] = gpu(*fold(tensors, p + ".project", eps))
        block["hidden"] = block["depthwise"][0].shape[0]
        net["blocks"].append(block)
    net["head"] = gpu(*fold(tensors, "head", eps))
    net["classifier"] = gpu(tensors["classifier.weight"], tensors["classifier.bias"])
    return net


def make_forward(net, F):
    def forward(x):
        x = F.relu6(F.conv2d(x, *net["stem"], padding=1))
        for b in net["blocks"]:
            h = F.relu6(F.conv2d(x, *b["expand"])) if "expand" in b else x
            h = F.relu6(F.conv2d(h, *b["depthwise"], stride=b["stride"], padding=1, groups=b["hidden"]))
            h = F.conv2d(h, *b["project"])
            x = h + x if h.shape == x.shape else h  # stride 1 and in == out: the residual
        x = F.relu6(F.conv2d(x, *net["head"]))
        return F.linear(x.mean(dim=(2, 3)), *net["classifier"])
    return forward


def cudnn_times(path):
    """{(workload, batch): median_ms} of the 'cudnn' rows already in the CSV file."""
    if not path or not os.path.exists(path):
        return {}
    with open(path) as f:
        return {(r["workload"], int(r["batch"])): float(r["median_ms"]) for r in csv.DictReader(f) if r["version"] == "cudnn"}


def main():
    parser = argparse.ArgumentParser(description="Lab 08's MobileNetV2 in PyTorch, timed like lab08_mobilenet.")
    parser.add_argument("--repetitions", type=int, default=20, help="timed passes per row (default 20)")
    parser.add_argument("--csv", metavar="FILE", help="append rows to FILE (lab08_mobilenet's columns)")
    parser.add_argument("--ours", metavar="FILE", help="our logits, float32 [10000,10], to compare with")
    parser.add_argument("--batch", type=batch_list, default=[10000, 1], metavar="B[,B...]")
    args = parser.parse_args()
    found = fp32_torch("torch_mobilenet.py")
    if found is None:
        return 0
    torch, F = found

    folder = os.environ.get("COURSE_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    images_file, labels_file = find(folder, "t10k-images-idx3-ubyte"), find(folder, "t10k-labels-idx1-ubyte")
    if not (images_file and labels_file):
        print(f"torch_mobilenet.py: the Fashion-MNIST test split is not in {folder}; nothing to compare")
        return 0
    images, labels = read_idx(images_file), read_idx(labels_file)
    tensors, metadata = read_safetensors(os.path.join(ROOT, "data", "weights", "mobilenet_fashion_mnist.safetensors"))
    dev = torch.device("cuda")
    forward = make_forward(build(tensors, float(metadata.get("bn_eps", 1e-5)), torch, dev), F)
    count = images.shape[0]
    x_all = torch.from_numpy(images.astype(np.float32) / 255.0).reshape(count, 1, 28, 28).to(dev)
    device = torch.cuda.get_device_name()

    with torch.inference_mode():
        logits = forward(x_all).cpu().numpy()
    accuracy = float((logits.argmax(1) == labels).mean())
    print(f"torch_mobilenet.py: {device}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{args.repetitions} timed passes per row (median, L2 flushed)")
    print(f"check: accuracy {100 * accuracy:.2f} % on {count} images (the weights record "
          f"{metadata.get('test_accuracy', '?')})")
    if args.ours:
        ours = np.fromfile(args.ours, dtype=np.float32).reshape(-1, 10)
        n = min(len(ours), count)
        print(f"check: max |PyTorch logit - ours| = {np.abs(ours[:n] - logits[:n]).max():.3e} over {n} images "
              f"(lab 08's tolerance 1e-3 + 1e-3 |logit| against the golden network)")

    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.float32, device=dev)  # well over any L2

    def time_it(run):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(5):
            run()
        samples = []
        for _ in range(args.repetitions):
            flush.zero_()
            start.record()
            run()
            stop.record()
            stop.synchronize()
            samples.append(start.elapsed_time(stop))
        return statistics.median(samples), min(samples)

    rows = []
    with torch.inference_mode():
        for batch in args.batch:
            x = x_all[:batch].contiguous() if batch <= count else x_all.repeat(-(-batch // count), 1, 1, 1)[:batch]
            rows.append(("pytorch_eager", batch) + time_it(lambda: forward(x)))
            side = torch.cuda.Stream()  # warm-up on a side stream, as torch.cuda.graphs asks
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    forward(x)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = forward(x)
            rows.append(("pytorch_graph", batch) + time_it(graph.replay))
            del out, graph

    cudnn = cudnn_times(args.csv)
    print("\n| workload         | version       |  batch |  median ms |   images/s | x cuDNN |")
    print("|------------------|---------------|-------:|-----------:|-----------:|--------:|")
    fresh = args.csv and (not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0)
    out = open(args.csv, "a", newline="") if args.csv else None
    writer = csv.writer(out) if out else None
    if fresh:
        writer.writerow(COLUMNS)
    for version, batch, ms, ms_min in rows:
        ratio = cudnn[(WORKLOAD, batch)] / ms if (WORKLOAD, batch) in cudnn else 0.0
        per_s = batch / (ms / 1000.0)
        print(f"| {WORKLOAD} | {version:<13s} | {batch:6d} | {ms:10.4f} | {per_s:10.0f} | {ratio:7.2f} |")
        if writer:
            writer.writerow([WORKLOAD, version, batch, f"{ms:.6f}", f"{ms_min:.6f}", f"{per_s:.1f}", f"{ratio:.4f}", device])
    if out:
        out.close()
        print(f"\nrows appended to {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
