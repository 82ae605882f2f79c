#!/usr/bin/env python3
"""Lab 07's whole benchmark in one run on one GPU, into one CSV.

    python3 bench/lab07_benchmark.py [--build DIR] [--csv FILE] [--quick] [--repetitions R] [--append]

Runs, one after the other on the same GPU:
  1. build/bench/lab07_ladder: every rung of the ladder, cuDNN (lab 05) and the CPU, each checked
     against the golden CPU network first, then timed in the modes device, graph and host at the
     batches 1, 10, 100, 1,000 and 10,000 (--quick: 1, 100 and 10,000 with 10 repetitions);
  2. bench/torch_lenet.py --csv: PyTorch on the same weights and images, eager and as a CUDA
     graph at the same batches (device-resident), plus one host row: 10,000 uint8 images in pinned
     host memory to labels in host memory.
Both append to the same CSV (default bench/results/lab07_<gpu>.csv; replaced unless --append),
with the columns
  source,version,name,mode,batch,median_ms,min_ms,us_per_image,gflop_per_s,percent_fp32_peak,device
which bench/plot_lab07.py turns into the lecture's plots and table.

Exit status: the ladder's (0 all good, 1 a pipeline failed its check or its run, 77 no GPU), or 2
when the ladder program is missing. PyTorch missing is not an error: its rows are left out, and
the script says so.
"""
import argparse
import collections
import csv
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FULL_BATCHES = [1, 10, 100, 1000, 10000]
QUICK_BATCHES = [1, 100, 10000]
QUICK_REPETITIONS = 10
SKIP = 77  # the ladder's "no GPU" exit code (CTest's SKIP_RETURN_CODE)


def gpu_name():
    """The first GPU's name from nvidia-smi, or None."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    return lines[0] if lines else None


def slug(name):
    """'NVIDIA H100 80GB HBM3' -> 'h100_80gb_hbm3': a file-name part."""
    text = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return re.sub(r"^nvidia_", "", text) or "gpu"


def fp32_peak_tflops(csv_path):
    """The FP32 peak the ladder used, recovered from its rows (gflop_per_s / percent * 100), from
    the row with the largest percentage (the most significant digits), or None."""
    best = None
    try:
        with open(csv_path, newline="") as f:
            for row in csv.DictReader(f):
                try:
                    gflops, percent = float(row["gflop_per_s"]), float(row["percent_fp32_peak"])
                except (KeyError, ValueError):
                    continue
                if row.get("source") == "ladder" and percent > 0 and (best is None or percent > best[1]):
                    best = (gflops, percent)
    except OSError:
        pass
    return best[0] / best[1] * 100.0 / 1000.0 if best else None


def count_rows(csv_path):
    """{source: number of rows} of the CSV ({} when it does not exist)."""
    try:
        with open(csv_path, newline="") as f:
            return dict(collections.Counter(row.get("source", "?") for row in csv.DictReader(f)))
    except OSError:
        return {}


def run(command):
    print("\n$ " + " ".join(command), flush=True)
    return subprocess.run(command).returncode


def main():
    parser = argparse.ArgumentParser(description="Lab 07's ladder, cuDNN, the CPU and PyTorch in one CSV.")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"),
                        help="the CMake build folder holding bench/lab07_ladder (default build)")
    parser.add_argument("--csv", help="output file (default bench/results/lab07_<gpu>.csv)")
    parser.add_argument("--quick", action="store_true",
                        help=f"batches {','.join(map(str, QUICK_BATCHES))} and {QUICK_REPETITIONS} repetitions")
    parser.add_argument("--repetitions", type=int, default=None,
                        help="timed runs per row (default 20; --quick: 10)")
    parser.add_argument("--append", action="store_true", help="keep the rows already in the CSV")
    args = parser.parse_args()
    if args.repetitions is not None and args.repetitions < 1:
        parser.error("--repetitions must be >= 1")

    ladder = os.path.join(args.build, "bench", "lab07_ladder")
    if not os.access(ladder, os.X_OK):
        print(f"lab07_benchmark.py: {ladder} not found; build it first: cmake --build {args.build} "
              "--target lab07_ladder", file=sys.stderr)
        return 2
    name = gpu_name()
    csv_path = args.csv or os.path.join(ROOT, "bench", "results", f"lab07_{slug(name) if name else 'gpu'}.csv")
    os.makedirs(os.path.dirname(os.path.abspath(csv_path)), exist_ok=True)
    if os.path.exists(csv_path) and not args.append:
        print(f"lab07_benchmark.py: replacing {csv_path} (--append keeps its rows)")
        os.remove(csv_path)

    batches = QUICK_BATCHES if args.quick else FULL_BATCHES
    repetitions = args.repetitions or (QUICK_REPETITIONS if args.quick else 20)
    batch_text = ",".join(map(str, batches))
    print(f"lab07_benchmark.py: {name or 'GPU name unknown'}; batches {batch_text}; {repetitions} repetitions")

    ladder_status = run([ladder, "--version", "all", "--batch", batch_text, "--mode", "device,graph,host",
                         "--repetitions", str(repetitions), "--csv", csv_path])
    if ladder_status == SKIP:
        print("lab07_benchmark.py: no GPU; nothing measured")
        return SKIP

    torch_command = [sys.executable, os.path.join(ROOT, "bench", "torch_lenet.py"), str(repetitions), "--csv",
                     csv_path, "--batch", batch_text, "--host-batch", "10000"]
    peak = fp32_peak_tflops(csv_path)
    if peak:
        torch_command += ["--fp32-peak-tflops", f"{peak:.3f}"]
    torch_status = run(torch_command)

    counts = count_rows(csv_path)
    print(f"\nlab07_benchmark.py: wrote {sum(counts.values())} rows to {csv_path} "
          f"({', '.join(f'{k}: {v}' for k, v in sorted(counts.items())) or 'none'})")
    if "pytorch" not in counts:
        print("lab07_benchmark.py: no PyTorch rows (torch_lenet.py said why above)")
    if torch_status != 0:
        print(f"lab07_benchmark.py: torch_lenet.py failed (exit {torch_status})")
    if ladder_status != 0:
        print(f"lab07_benchmark.py: lab07_ladder reported a failure (exit {ladder_status}); see its output above")
        return ladder_status
    print(f"draw the plots: python3 bench/plot_lab07.py --csv {csv_path}")
    return 1 if torch_status != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
