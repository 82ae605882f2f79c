#!/usr/bin/env python3
"""Lab 08's plots, drawn from the CSV files that bench/lab08_mobilenet.cu and bench/lab08_conv3x3.cu write.

    python3 bench/plot_lab08.py --mobilenet-csv bench/results/lab08_mobilenet_<gpu>.csv \\
                                [--conv3x3-csv bench/results/lab08_conv3x3_<gpu>.csv] [--out-dir lectures/figures]

Writes, into --out-dir (default lectures/figures):
  08-mobilenet-measured.svg  the whole MobileNetV2 on N images (default 10,000, --batch): one
                             horizontal bar per version (ms, with images/s and the factor over
                             cuDNN + cuBLAS beside it), fastest on top, the lab's solution
                             highlighted, cuDNN + cuBLAS as a reference line;
  08-blocks-vs-cudnn.svg     per inverted residual block, the fused solution's speed-up over
                             cuDNN + cuBLAS (cuDNN's time / ours, log scale, a line at 1.0): the
                             network's 7 blocks at batch 10,000 and MobileNetV2@224's blocks at
                             batch 32 and 256;
  08-conv3x3-ladder.svg      (with --conv3x3-csv) ResNet-50's 3 x 3 layers: each of our versions
                             v1 .. v9 as cuDNN's best time divided by ours (log scale, a line at
                             1.0), the FP32 versions against cuDNN's best FP32 row, the TF32
                             versions against cuDNN's best row with tensor ops allowed, one panel
                             row per batch (default 32 and 256, --conv3x3-batches);
and prints a short summary of what each figure shows, so that the lecture's text can be checked
against the same file that drew the pictures (lectures/tools/ch08_numbers.py prints its tables).

Only the Python 3 standard library, like bench/plot_lab07.py, whose SVG helpers (text, axes,
document) this script reuses so that the two labs' figures look alike: anyone can redraw the
figures on their own GPU's CSV without installing anything.

The MobileNet CSV (bench/lab08_mobilenet.cu, bench/torch_mobilenet.py append to it):
  workload,version,batch,median_ms,min_ms,images_per_s,x_cudnn,device
workload is "mobilenet_fmnist" for the whole network, "blockI C-H-C' sS PxQ" for the network's
blocks and "v2@224 C-H-C' sS PxQ" for MobileNetV2@224's; x_cudnn is the "cudnn" version's time
divided by the row's (above 1: faster than cuDNN + cuBLAS).
The 3 x 3 CSV (bench/lab08_conv3x3.cu):
  gpu,cudnn_version,batch,H,W,C,K,stride,version,math,median_ms,tflops,status
version is "vN ..." for ours, "cudnn ALGO" for one of cuDNN's algorithms and "cudnn choice: ALGO"
for the row cudnnFind ranked first (a repeat, skipped here); math is fp32 (FMA math) or tf32 /
default (tensor ops allowed). A row without a time (v5's "n/a" at stride 2) is skipped. In both
files, when the same key appears more than once (the programs append), the last row wins.
"""
import argparse
import collections
import csv
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # importing plot_lab07 must not leave a __pycache__ in bench/
# The same helpers, palette and halo as lab 07's figures: one look for the course's measured plots.
from plot_lab07 import HALO, PALETTE, LogAxis, fmt_factor, marker, number, svg_document, text, write  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOBILENET_COLUMNS = ["workload", "version", "batch", "median_ms", "min_ms", "images_per_s", "x_cudnn", "device"]
CONV3X3_COLUMNS = ["gpu", "batch", "H", "W", "C", "K", "stride", "version", "math", "median_ms", "status"]
NETWORK = "mobilenet_fmnist"
CUDNN = "cudnn"            # the reference version every factor in the MobileNet CSV is relative to
SOLUTION = "solution"

# The lecture's names for the versions (section 11's table); an unknown version keeps its CSV name.
VERSION_LABEL = {
    "solution": "the lab's solution, each block fused",
    "unfused": "part A's kernels, layer by layer",
    "v1_fused_scalar": "the first fused block (scalar sums)",
    "cudnn": "cuDNN + cuBLAS (each 1 × 1 on the faster)",
    "cudnn_conv1x1": "cuDNN + cuBLAS, every 1 × 1 on cuDNN",
    "cudnn_gemm1x1": "cuDNN + cuBLAS, every 1 × 1 on cuBLAS",
    "pytorch_eager": "PyTorch eager",
    "pytorch_graph": "PyTorch, one CUDA graph",
}
OURS_COLOUR = "#8fb3de"    # lab 07's "optimization steps": our rungs below the solution
CUDNN_LIGHT = "#98d398"    # the cuDNN variants that are not the reference row
LOSS_DARK, LOSS_LIGHT = "#d62728", "#e7a7a5"  # a block slower than cuDNN + cuBLAS
WIN_LIGHT = "#8fb3de"

# ResNet-50's 3 x 3 versions (bench/lab08_conv3x3.cu's header): FP32 ones compare with cuDNN's best
# FP32 row, TF32 ones with its best row with tensor ops allowed. Colours: lab 07's purple for
# reduced precision, the others distinct from cuDNN's green, which marks the line at 1.0.
CONV_VERSIONS = [
    ("v1", "v1 im2col + naive GEMM", "#7f7f7f", "square"),
    ("v2", "v2 im2col + tiled SGEMM", "#ff7f0e", "circle"),
    ("v3", "v3 im2col + cuBLAS SGEMM", "#8c564b", "diamond"),
    ("v4", "v4 implicit GEMM", "#1f77b4", "circle"),
    ("v5", "v5 Winograd F(2 × 2, 3 × 3)", "#17becf", "triangle"),
    ("v6", "v6 implicit GEMM, TF32 WMMA", "#b39ddb", "circle"),
    ("v7", "v7 implicit GEMM, TF32 mma.sync pipelined", "#6a3d9a", "diamond"),
    ("v8", "v8 implicit GEMM, TF32 mma.sync ldmatrix", "#d62728", "triangle"),
    ("v9", "v9 implicit GEMM, TF32 on an NHWC copy", "#e377c2", "square"),
]
TF32_VERSIONS = {"v6", "v7", "v8", "v9"}


def fail(message):
    raise SystemExit(f"plot_lab08: {message}")


def most_frequent_device(devices, path):
    counts = collections.Counter(d for d in devices if d)
    if len(counts) > 1:
        print(f"plot_lab08: warning: {path} mixes GPUs ({', '.join(counts)}); the titles name the most "
              f"frequent", file=sys.stderr)
    return counts.most_common(1)[0][0] if counts else "unknown GPU"


def read_csv(path, columns):
    """The CSV's rows as dicts, after checking that the named columns are there."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                fail(f"{path}: missing column(s) {', '.join(missing)}; expected at least {','.join(columns)}")
            return list(enumerate(reader, start=2))
    except OSError as error:
        fail(f"cannot read {path}: {error.strerror}")


# ----------------------------------------------------------------------------------------------
# The MobileNet CSV
# ----------------------------------------------------------------------------------------------

BLOCK_PATTERN = re.compile(r"^(block\d+|v2@224)\s+(\d+)-(\d+)-(\d+)\s+s(\d+)\s+(\d+)x(\d+)$")


class Block:
    """One workload "block3 24-144-32 s2 14x14" or "v2@224 96-576-96 s1 14x14"."""

    def __init__(self, workload):
        match = BLOCK_PATTERN.match(workload)
        self.workload = workload
        self.ours = match is not None and match.group(1).startswith("block")
        if match:
            self.name = match.group(1)
            self.c_in, self.hidden, self.c_out, self.stride, self.h, self.w = map(int, match.groups()[1:])
        else:  # an unknown shape string still gets a row, under its own name
            self.name, self.c_in, self.hidden, self.c_out, self.stride, self.h, self.w = workload, 0, 0, 0, 1, 0, 0

    def label(self):
        if not self.hidden:
            return self.workload
        shape = f"{self.c_in} → {self.hidden} → {self.c_out}, s{self.stride}, {self.h} × {self.w}"
        return f"{self.name}: {shape}" if self.ours else shape


def read_mobilenet(path):
    """{(workload, version, batch): median ms} (last row wins) and the GPU's name."""
    times, devices = collections.OrderedDict(), []
    for line_number, cells in read_csv(path, MOBILENET_COLUMNS):
        try:
            batch = int(cells["batch"])
        except (TypeError, ValueError):
            fail(f"{path}:{line_number}: bad batch {cells['batch']!r}")
        ms = number(cells["median_ms"])
        if ms is None or ms <= 0 or batch < 1:
            continue
        times[(cells["workload"].strip(), cells["version"].strip(), batch)] = ms
        devices.append(cells["device"].strip())
    if not times:
        fail(f"{path} holds no timed rows")
    return times, most_frequent_device(devices, path)


def network_versions(times, batch):
    """[(version, ms)] of the whole network at one batch, fastest first."""
    rows = [(v, ms) for (w, v, b), ms in times.items() if w == NETWORK and b == batch]
    return sorted(rows, key=lambda r: r[1])


def version_label(version):
    """The lecture's name; batch 1's "X_graph" rows are X replayed from a CUDA graph."""
    if version in VERSION_LABEL:
        return VERSION_LABEL[version]
    if version.endswith("_graph") and version[:-len("_graph")] in VERSION_LABEL:
        return VERSION_LABEL[version[:-len("_graph")]] + " (CUDA graph)"
    return version


def version_colour(version):
    if version == SOLUTION:
        return PALETTE["solution"]
    if version == CUDNN:
        return PALETTE["cudnn"]
    if version.startswith("cudnn"):
        return CUDNN_LIGHT
    if version.startswith("pytorch"):  # the graph replay lighter, as cuDNN's variants are
        return "#ffbb78" if version.endswith("_graph") else PALETTE["torch_eager"]
    return OURS_COLOUR


def fmt_time(ms):
    """Milliseconds as the lecture prints them: 17.56, 0.359."""
    return f"{ms:.2f}" if ms >= 1 else f"{ms:.3f}"


def images(batch):
    return f"{batch:,} image" + ("" if batch == 1 else "s")


def nice_step(span, ticks=6):
    """A round tick spacing (1, 2 or 5 times a power of ten) giving about `ticks` ticks over span."""
    raw = span / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def plot_mobilenet(times, device, path, batch, csv_name):
    rows = network_versions(times, batch)
    if not rows:
        fail(f"no {NETWORK} rows at batch {batch}")
    reference = dict(rows).get(CUDNN)
    bar_height, gap = 30, 12
    top, left, right = 112, 330, 640
    columns = (790, 935)  # images/s and the factor in columns of their own, right-aligned like a table
    bottom = top + len(rows) * (bar_height + gap) - gap
    width, height = 960, bottom + 104
    longest = max(ms for _, ms in rows)
    step = nice_step(longest)
    axis_max = step * math.ceil(longest / step)
    x_of = lambda ms: left + (right - left) * ms / axis_max  # noqa: E731 (linear: the times add up)
    body = [text(20, 30, f"The whole MobileNetV2 on {device}: {images(batch)} from Fashion-MNIST, already on the GPU",
                 size=14, weight="bold"),
            text(20, 52, "Each bar: the median time of one forward pass over all the images (lower is faster). "
                 "On the right: images per second,", fill="#555", size=12),
            text(20, 68, "and cuDNN + cuBLAS's time divided by the version's (above 1×: faster than the libraries).",
                 fill="#555", size=12)]
    for i in range(int(round(axis_max / step)) + 1):
        value = i * step
        x = x_of(value)
        body.append(f'<line x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" y2="{bottom + 6}" stroke="#e4e4e4"/>')
        body.append(text(x, bottom + 24, f"{value:g}", anchor="middle", fill="#555"))
    body.append(f'<line x1="{left}" y1="{top - 8}" x2="{left}" y2="{bottom + 6}" stroke="#555"/>')
    body.append(text((left + right) / 2, bottom + 46, f"milliseconds for {images(batch)} (linear scale)",
                     anchor="middle"))
    if reference:  # the libraries as a line across every bar, the way lab 07's ladder shows cuDNN
        x = x_of(reference)
        body.append(f'<line x1="{x:.1f}" y1="{top - 22}" x2="{x:.1f}" y2="{bottom + 6}" stroke="{PALETTE["cudnn"]}" '
                    f'stroke-width="2" stroke-dasharray="6 4"/>')
        body.append(text(x, top - 28, f"cuDNN + cuBLAS {fmt_time(reference)} ms", anchor="middle",
                         fill=PALETTE["cudnn"], size=12, weight="bold"))
        body.append(text(columns[1], top - 28, "× cuDNN + cuBLAS", anchor="end", weight="bold", size=12))
    body.append(text(columns[0], top - 28, "images/s", anchor="end", weight="bold", size=12))
    for i, (version, ms) in enumerate(rows):
        y = top + i * (bar_height + gap)
        colour = version_colour(version)
        highlight = version == SOLUTION
        stroke = ' stroke="#0b3d6b" stroke-width="2"' if highlight else ' stroke="#555" stroke-width="0.6"'
        body.append(f'<rect x="{left}" y="{y}" width="{max(x_of(ms) - left, 1.0):.1f}" height="{bar_height}" '
                    f'fill="{colour}"{stroke}/>')
        weight = "bold" if highlight else None
        # the lecture's name, and under it the CSV's key, so a reader can find the row in the file
        body.append(text(left - 10, y + 14, version_label(version), anchor="end", size=12,
                         weight=weight))
        body.append(text(left - 10, y + 27, version, anchor="end", fill="#777", size=10,
                         extra=' font-family="Menlo, Consolas, monospace"'))
        body.append(text(x_of(ms) + 6, y + 20, f"{fmt_time(ms)} ms", size=12, weight=weight, extra=HALO))
        body.append(text(columns[0], y + 20, f"{1000.0 * batch / ms:,.0f}", anchor="end", size=12, weight=weight))
        if reference:
            body.append(text(columns[1], y + 20, f"{reference / ms:.2f}×", anchor="end", size=12, weight=weight))
    legend_y = bottom + 74
    x = 20
    for colour, label in ((PALETTE["solution"], "the lab's solution"), (OURS_COLOUR, "our other versions"),
                          (PALETTE["cudnn"], "cuDNN + cuBLAS (the reference)"), (CUDNN_LIGHT, "its variants"),
                          (PALETTE["torch_eager"], "PyTorch (TF32 off)")):
        body.append(f'<rect x="{x}" y="{legend_y - 11}" width="14" height="14" fill="{colour}" stroke="#555" '
                    f'stroke-width="0.6"/>')
        body.append(text(x + 20, legend_y, label, size=12))
        x += 34 + 7 * len(label)
    body.append(text(20, height - 10, f"Drawn by bench/plot_lab08.py from {csv_name} (bench/lab08_mobilenet.cu, "
                     "bench/torch_mobilenet.py; median of the timed runs, L2 flushed before each).",
                     fill="#555", size=11))
    title = f"MobileNetV2 on {images(batch)} on {device}: ours, cuDNN + cuBLAS and PyTorch"
    write(path, svg_document(width, height, title, body))
    return rows, reference


def block_rows(times):
    """([(Block, factor)] of the network's blocks at their batch, [(Block, {batch: factor})] of
    MobileNetV2@224's), factor = cuDNN + cuBLAS's time / the solution's, in the CSV's order."""
    ours, v2 = [], collections.OrderedDict()
    for (workload, version, batch), ms in times.items():
        if workload == NETWORK or version != SOLUTION:
            continue
        cudnn = times.get((workload, CUDNN, batch))
        if cudnn is None:
            continue
        block = Block(workload)
        if block.ours:
            ours.append((block, batch, cudnn / ms))
        else:
            v2.setdefault(workload, (block, {}))[1][batch] = cudnn / ms
    return ours, list(v2.values())


def plot_blocks(times, device, path, csv_name):
    ours, v2 = block_rows(times)
    if not ours and not v2:
        fail("no block rows (solution and cudnn at the same workload and batch)")
    v2_batches = sorted({b for _, factors in v2 for b in factors})
    our_batches = sorted({b for _, b, _ in ours})
    values = [f for _, _, f in ours] + [f for _, factors in v2 for f in factors.values()]
    # log scale: a factor of 2 faster and a factor of 2 slower lie equally far from the line at 1
    left, right = 300, 760
    axis = LogAxis(min(values + [1.0]), max(values + [1.0]), left, right)
    cut_to_ticks(axis, min(values + [1.0]), max(values + [1.0]))
    row_height, sub_height = 26, 16
    top = 124
    y = top
    body = [text(20, 30, f"The fused block against cuDNN + cuBLAS, block by block, on {device}",
                 size=14, weight="bold"),
            text(20, 52, "Each bar: cuDNN + cuBLAS's median time divided by the fused solution's (log scale). "
                 "Right of the line at 1×: the fused", fill="#555", size=12),
            text(20, 68, "block is faster. Channels: input → expanded (hidden) → output; s: the depthwise "
                 "stride; then the input's height × width.", fill="#555", size=12)]
    bars, headings = [], []
    if ours:
        batches = ", ".join(f"{b:,}" for b in our_batches)
        headings.append((y, f"Our network's 7 blocks (Fashion-MNIST, trained weights), batch {batches}"))
        y += 22
        for block, batch, factor in ours:
            bars.append((y, row_height - 8, factor, block.label(), f"{fmt_factor(factor)}", None))
            y += row_height
        y += 14
    if v2:
        batches = " and ".join(f"{b:,}" for b in v2_batches)
        headings.append((y, f"MobileNetV2's blocks at 224 × 224 (random weights), batch {batches}"))
        y += 22
        for block, factors in v2:
            for j, batch in enumerate(v2_batches):
                if batch in factors:
                    bars.append((y + j * sub_height, sub_height - 1, factors[batch],
                                 block.label() if j == 0 else None, f"{fmt_factor(factors[batch])} at N = {batch:,}",
                                 j))
            y += sub_height * len(v2_batches) + 10
    bottom = y - 4
    for v in minor_values(axis):
        body.append(f'<line x1="{axis(v):.1f}" y1="{top - 6}" x2="{axis(v):.1f}" y2="{bottom}" stroke="#f0f0f0"/>')
    for v in tick_values(axis):
        x = axis(v)
        body.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{bottom}" stroke="#d0d0d0"/>')
        body.append(text(x, bottom + 18, f"{v:g}×", anchor="middle", fill="#555"))
    body.append(text((left + right) / 2, bottom + 40, "cuDNN + cuBLAS's time / the fused solution's (log scale)",
                     anchor="middle"))
    for hy, heading in headings:
        body.append(text(20, hy + 12, heading, weight="bold", size=12))
    one = axis(1.0)
    for by, bh, factor, label, value_label, batch_index in bars:
        x1 = axis(factor)
        win = factor >= 1.0
        if batch_index is None:  # our blocks: one batch, lab 07's solution colour
            colour = PALETTE["solution"] if win else LOSS_DARK
        else:                    # MobileNetV2@224: the smaller batch lighter
            last = batch_index == len(v2_batches) - 1
            colour = (PALETTE["solution"] if last else WIN_LIGHT) if win else (LOSS_DARK if last else LOSS_LIGHT)
        body.append(f'<rect x="{min(one, x1):.1f}" y="{by}" width="{max(abs(x1 - one), 1.0):.1f}" height="{bh}" '
                    f'fill="{colour}" stroke="#555" stroke-width="0.5"/>')
        if label:
            label_y = by + bh / 2 + 4 if batch_index is None else by + sub_height * len(v2_batches) / 2 + 3
            body.append(text(left - 10, label_y, label, anchor="end", size=12))
        # the factor beside the bar's free end: right of a win, left of a loss; a loss too long
        # for its label to fit before the row labels gets it right of the line at 1× instead
        if win or x1 - left < 6.2 * len(value_label) + 8:
            body.append(text(max(x1, one) + 5, by + bh / 2 + 4, value_label, size=11, extra=HALO))
        else:
            body.append(text(x1 - 5, by + bh / 2 + 4, value_label, anchor="end", size=11, extra=HALO))
    body.append(f'<line x1="{one:.1f}" y1="{top - 22}" x2="{one:.1f}" y2="{bottom}" stroke="{PALETTE["cudnn"]}" '
                f'stroke-width="2" stroke-dasharray="6 4"/>')
    body.append(text(one, top - 28, "cuDNN + cuBLAS = 1×", anchor="middle", fill=PALETTE["cudnn"], size=12,
                     weight="bold"))
    legend_y = bottom + 66
    large = " and ".join(f"{b:,}" for b in sorted(set(our_batches + v2_batches[-1:])))
    entries = [(PALETTE["solution"], f"faster, batch {large}"), (LOSS_DARK, f"slower, batch {large}")]
    if len(v2_batches) > 1:
        entries += [(WIN_LIGHT, f"faster, batch {v2_batches[0]:,}"), (LOSS_LIGHT, f"slower, batch {v2_batches[0]:,}")]
    x = 20
    for colour, label in entries:
        body.append(f'<rect x="{x}" y="{legend_y - 11}" width="14" height="14" fill="{colour}" stroke="#555" '
                    f'stroke-width="0.6"/>')
        body.append(text(x + 20, legend_y, label, size=12))
        x += 34 + 7 * len(label)
    height = legend_y + 36
    body.append(text(20, height - 10, f"Drawn by bench/plot_lab08.py from {csv_name} (bench/lab08_mobilenet.cu; "
                     "median of the timed runs, L2 flushed before each).", fill="#555", size=11))
    title = f"Speed-up of the fused inverted residual block over cuDNN + cuBLAS, per block, on {device}"
    write(path, svg_document(960, height, title, body))
    return ours, v2, v2_batches


def cut_to_ticks(axis, low, high, headroom=1.05, footroom=1.05):
    """Narrow a whole-decade log axis to the 1-2-5 ticks around [low, high]: a decade that holds
    no data would only squeeze the bars. headroom: how far past the largest value the axis must
    go (room for a label right of it), footroom: how far below the smallest (a dot off the frame)."""
    ticks = [m * 10.0 ** e for e in range(axis.lo - 1, axis.hi + 1) for m in (1, 2, 5)] + [10.0 ** (axis.hi + 1)]
    start = max(t for t in ticks if t <= low / footroom)
    end = min(t for t in ticks if t >= high * headroom)
    axis.lo, axis.hi = math.log10(start), math.log10(end)


def tick_values(axis):
    """Labelled ticks of a log axis: 1, 2 and 5 per decade, inside the axis's range (whose top may
    be cut short of a whole decade, so axis.hi can be a fraction)."""
    return [m * 10.0 ** e for e in range(math.floor(axis.lo + 1e-9), math.ceil(axis.hi) + 1) for m in (1, 2, 5)
            if axis.lo - 1e-9 <= math.log10(m * 10.0 ** e) <= axis.hi + 1e-9]


def minor_values(axis):
    """The unlabelled grid lines 2 .. 9 per decade, inside the axis's range."""
    return [m * 10.0 ** e for e in range(math.floor(axis.lo + 1e-9), math.ceil(axis.hi)) for m in range(2, 10)
            if axis.lo + 1e-9 < math.log10(m * 10.0 ** e) < axis.hi - 1e-9]


# ----------------------------------------------------------------------------------------------
# The ResNet-50 3 x 3 CSV
# ----------------------------------------------------------------------------------------------

class Layer:
    """One layer at one batch: cuDNN's best FP32 row, its best row with tensor ops allowed, ours."""

    def __init__(self, h, w, c, k, stride):
        self.h, self.w, self.c, self.k, self.stride = h, w, c, k, stride
        self.cudnn = {}  # (algorithm, math) -> ms, the last row of each
        self.ours = {}   # "v1" .. "v9" -> ms

    def label(self):
        shape = f"{self.h} × {self.w} × {self.c}"
        if self.k != self.c:
            shape += f" → {self.k}"
        return f"{shape}, s{self.stride}"

    def best(self, tensor_ops):
        rows = [(ms, algo, m) for (algo, m), ms in self.cudnn.items() if (m != "fp32") == tensor_ops]
        return min(rows) if rows else None


def read_conv3x3(path):
    """{batch: [Layer] in the CSV's order} and the GPU's name."""
    layers, devices = collections.OrderedDict(), []
    for line_number, cells in read_csv(path, CONV3X3_COLUMNS):
        try:
            batch = int(cells["batch"])
            shape = tuple(int(cells[c]) for c in ("H", "W", "C", "K", "stride"))
        except (TypeError, ValueError):
            fail(f"{path}:{line_number}: bad batch or shape")
        ms = number(cells["median_ms"])
        version = cells["version"].strip()
        if ms is None or ms <= 0 or cells["status"].strip() != "ok":
            continue
        devices.append(cells["gpu"].strip())
        layer = layers.setdefault(batch, collections.OrderedDict()).setdefault(shape, Layer(*shape))
        if version.startswith("cudnn choice:"):
            continue  # a repeat of one of cuDNN's rows (cudnnFind's first), not another measurement
        if version.startswith("cudnn "):
            layer.cudnn[(version[len("cudnn "):], cells["math"].strip())] = ms
        elif re.match(r"^v\d\s", version) and "filter transform" not in version:
            layer.ours[version.split()[0]] = ms  # v5's filter transform is once per model, not per call
    if not layers:
        fail(f"{path} holds no timed rows")
    return {b: list(shapes.values()) for b, shapes in layers.items()}, most_frequent_device(devices, path)


def conv_factors(layer):
    """{version: cuDNN's reference time / ours}: FP32 versions against cuDNN's best FP32 row, TF32
    versions against its best row with tensor ops allowed (the lecture's comparison, section 10)."""
    out = {}
    fp32, tensor = layer.best(False), layer.best(True)
    for version, ms in layer.ours.items():
        reference = tensor if version in TF32_VERSIONS else fp32
        if reference:
            out[version] = reference[0] / ms
    return out


def plot_conv3x3(layers_by_batch, device, path, batches, csv_name):
    batches = [b for b in batches if b in layers_by_batch]
    if not batches:
        fail(f"the 3 x 3 CSV has none of the requested batches ({', '.join(map(str, sorted(layers_by_batch)))} "
             f"are there)")
    factors = {b: [(layer, conv_factors(layer)) for layer in layers_by_batch[b]] for b in batches}
    fp32 = [v for v in CONV_VERSIONS if v[0] not in TF32_VERSIONS]
    tf32 = [v for v in CONV_VERSIONS if v[0] in TF32_VERSIONS]
    lane = 7                     # each version its own lane in a layer's band, so no dot hides another
                                 # (7 pixels: lab 07's markers at half size 3, plot_lab07.marker)
    band = lane * len(fp32) + 10
    label_width = 150
    # Each panel spans its own versions' range, at the same pixels per decade, so that a distance
    # means the same factor in both; the FP32 panel (v1 reaches down to 0.01) sets the scale.
    ranges = []
    for versions in (fp32, tf32):
        keys = {v[0] for v in versions}
        values = [f for b in batches for _, fs in factors[b] for k, f in fs.items() if k in keys] + [1.0]
        axis = LogAxis(min(values), max(values), 0, 1)
        # room for "v5 1.40" right of its dot, and no dot on the frame's left edge
        cut_to_ticks(axis, min(values), max(values), headroom=1.6, footroom=1.3)
        ranges.append(axis)
    per_decade = 360 / (ranges[0].hi - ranges[0].lo)
    panel_a = (label_width + 20, label_width + 20 + 360)
    panel_b = (panel_a[1] + 60, panel_a[1] + 60 + per_decade * (ranges[1].hi - ranges[1].lo))
    width = max(panel_b[1] + 30, 880)  # the legend and the footer need 880
    axes = []
    for (p0, p1), axis in zip((panel_a, panel_b), ranges):
        axis.p0, axis.p1 = p0, p1
        axes.append(axis)
    top = 120
    body = [text(20, 30, f"ResNet-50's 3 × 3 layers on {device}: our {len(CONV_VERSIONS)} versions against cuDNN",
                 size=14, weight="bold"),
            text(20, 52, "Each dot: cuDNN's best time divided by ours (log scale; right of the line at 1×: ours "
                 "is faster). FP32 versions against", fill="#555", size=12),
            text(20, 68, "cuDNN's fastest FP32 algorithm (FMA math), TF32 versions against its fastest row with "
                 "tensor ops allowed. v5: stride 1 only.", fill="#555", size=12)]
    y = top
    for batch in batches:
        rows = factors[batch]
        panel_top = y
        panel_bottom = panel_top + len(rows) * band + 4
        body.append(text(20, panel_top - 12, f"batch {batch:,}", weight="bold"))
        for (p0, p1), axis, heading in ((panel_a, axes[0], "FP32: v1 – v5 / cuDNN's best FP32"),
                                        (panel_b, axes[1], "TF32: v6 – v9 / cuDNN's best, tensor cores")):
            body.append(text((p0 + p1) / 2, panel_top - 12, heading, anchor="middle", size=12, weight="bold"))
            for v in minor_values(axis):
                body.append(f'<line x1="{axis(v):.1f}" y1="{panel_top}" x2="{axis(v):.1f}" '
                            f'y2="{panel_bottom}" stroke="#f0f0f0"/>')
            for v in tick_values(axis):
                x = axis(v)
                body.append(f'<line x1="{x:.1f}" y1="{panel_top}" x2="{x:.1f}" y2="{panel_bottom}" stroke="#d0d0d0"/>')
                body.append(text(x, panel_bottom + 15, f"{v:g}×", anchor="middle", fill="#555", size=11))
            body.append(f'<rect x="{p0}" y="{panel_top}" width="{p1 - p0}" height="{panel_bottom - panel_top}" '
                        f'fill="none" stroke="#555"/>')
        for i, (layer, fs) in enumerate(rows):
            band_top = panel_top + 2 + i * band
            if i % 2:  # alternate bands lightly, so that a row's dots read across both panels
                for p0, p1 in (panel_a, panel_b):
                    body.append(f'<rect x="{p0 + 1}" y="{band_top}" width="{p1 - p0 - 2}" height="{band}" '
                                f'fill="#f6f6f6"/>')
            body.append(text(panel_a[0] - 8, band_top + band / 2 + 4, layer.label(), anchor="end", size=12))
            for versions, axis in ((fp32, axes[0]), (tf32, axes[1])):
                # fewer TF32 versions than FP32 ones: centre their lanes in the band
                offset = (band - 10 - lane * len(versions)) / 2
                one = axis(1.0)
                best = max((fs[v[0]] for v in versions if v[0] in fs), default=None)
                for j, (key, _, colour, shape) in enumerate(versions):
                    if key not in fs:
                        continue
                    cy = band_top + 5 + offset + lane * j + lane / 2
                    x = axis(fs[key])
                    body.append(f'<line x1="{one:.1f}" y1="{cy:.1f}" x2="{x:.1f}" y2="{cy:.1f}" stroke="{colour}" '
                                f'stroke-width="1.2" opacity="0.7"/>')
                    body.append(marker(shape, x, cy, colour, half=3))
                    if fs[key] == best:  # the row's best of this panel, named with its factor, on the
                        # side away from the line at 1× so that it does not sit on its own stick
                        label = f"{key} {fs[key]:.2f}"
                        if fs[key] >= 1.0:
                            body.append(text(x + 7, cy + 4, label, size=10, fill=colour, weight="bold", extra=HALO))
                        else:
                            body.append(text(x - 7, cy + 4, label, anchor="end", size=10, fill=colour,
                                             weight="bold", extra=HALO))
        for axis in axes:
            one = axis(1.0)
            body.append(f'<line x1="{one:.1f}" y1="{panel_top}" x2="{one:.1f}" y2="{panel_bottom}" '
                        f'stroke="{PALETTE["cudnn"]}" stroke-width="2" stroke-dasharray="6 4"/>')
        y = panel_bottom + 58
    bottom = y - 58 + 15
    body.append(text((panel_a[0] + panel_b[1]) / 2, bottom + 22, "cuDNN's time / ours (log scale; the dashed "
                     "green line: as fast as cuDNN)", anchor="middle"))
    legend_y = bottom + 50
    x = 20
    for key, label, colour, shape in CONV_VERSIONS:
        entry = 30 + 6.6 * len(label)  # marker, gap and the label at ~6.6 pixels per character
        if x > 20 and x + entry - 14 > width:  # the next line, rather than past the right edge
            legend_y += 20
            x = 20
        body.append(marker(shape, x + 6, legend_y - 4, colour, half=3))
        body.append(text(x + 16, legend_y, label, size=12))
        x += entry
    height = legend_y + 36
    body.append(text(20, height - 10, f"Drawn by bench/plot_lab08.py from {csv_name} (bench/lab08_conv3x3.cu: NCHW "
                     "FP32 in and out, padding 1; median of 10 runs, L2 flushed).", fill="#555", size=11))
    title = f"Our 3 × 3 convolutions as a fraction of cuDNN's speed, ResNet-50's layers, on {device}"
    write(path, svg_document(width, height, title, body))
    return factors


# ----------------------------------------------------------------------------------------------
# The summary
# ----------------------------------------------------------------------------------------------

def summarise_mobilenet(rows, reference, batch, ours, v2, v2_batches, device):
    print(f"\n08-mobilenet-measured.svg: the whole network, {images(batch)}, {device} (fastest first):")
    for version, ms in rows:
        factor = f", {fmt_factor(reference / ms)} cuDNN + cuBLAS" if reference else ""
        print(f"  {version:<20} {fmt_time(ms):>7} ms  {1000.0 * batch / ms:>11,.0f} images/s{factor}")
    print("\n08-blocks-vs-cudnn.svg: the fused solution / cuDNN + cuBLAS per block (cuDNN's time / ours):")
    for block, b, factor in ours:
        print(f"  {block.workload:<28} batch {b:>6,}: {fmt_factor(factor)}")
    for block, factors in v2:
        cells = ", ".join(f"batch {b}: {fmt_factor(factors[b])}" for b in v2_batches if b in factors)
        print(f"  {block.workload:<28} {cells}")
    wins = [f for _, _, f in ours] + [f for _, fs in v2 for f in fs.values()]
    losers = sorted({block.label() for block, fs in v2 if any(f < 1 for f in fs.values())}
                    | {block.label() for block, _, f in ours if f < 1})
    print(f"  faster than the libraries on {sum(f >= 1 for f in wins)} of {len(wins)} bars; slower somewhere on: "
          f"{'; '.join(losers) if losers else 'none'}")


def summarise_conv3x3(factors, device):
    print(f"\n08-conv3x3-ladder.svg: cuDNN's best / ours per ResNet-50 3 x 3 layer, {device}:")
    keys = [v[0] for v in CONV_VERSIONS]
    for batch, rows in factors.items():
        print(f"  batch {batch:,}: " + "  ".join(f"{k:>5}" for k in keys))
        for layer, fs in rows:
            cells = "  ".join(f"{fs[k]:5.2f}" if k in fs else "  n/a" for k in keys)
            print(f"    {layer.label():<22} {cells}")
        for k in keys:
            values = [fs[k] for _, fs in rows if k in fs]
            if values:
                print(f"    {k}: {min(values):.2f} to {max(values):.2f} of cuDNN's "
                      f"{'best with tensor ops' if k in TF32_VERSIONS else 'best FP32'}"
                      f"{f', ahead on {sum(v >= 1 for v in values)}' if any(v >= 1 for v in values) else ''}")


# ----------------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mobilenet-csv", help="bench/lab08_mobilenet_run.sh's CSV "
                        "(bench/results/lab08_mobilenet_<gpu>.csv): the first two figures")
    parser.add_argument("--conv3x3-csv", help="bench/lab08_conv3x3's CSV (bench/results/lab08_conv3x3_<gpu>.csv): "
                        "the third figure")
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "lectures", "figures"),
                        help="where the SVG files go (default: lectures/figures)")
    parser.add_argument("--batch", type=int, default=10000,
                        help="the whole network's batch size in the first figure (default 10000)")
    parser.add_argument("--conv3x3-batches", default="32,256",
                        help="the 3 x 3 figure's batch sizes, one panel row each (default 32,256)")
    args = parser.parse_args(argv)
    if not args.mobilenet_csv and not args.conv3x3_csv:
        parser.error("give --mobilenet-csv, --conv3x3-csv or both")
    try:
        conv_batches = [int(b) for b in args.conv3x3_batches.split(",") if b.strip()]
    except ValueError:
        parser.error("--conv3x3-batches: a comma-separated list of batch sizes")
    if not os.path.isdir(args.out_dir):
        fail(f"--out-dir {args.out_dir} is not a folder")

    if args.mobilenet_csv:
        times, device = read_mobilenet(args.mobilenet_csv)
        name = os.path.basename(args.mobilenet_csv)
        rows, reference = plot_mobilenet(times, device, os.path.join(args.out_dir, "08-mobilenet-measured.svg"),
                                         args.batch, name)
        ours, v2, v2_batches = plot_blocks(times, device, os.path.join(args.out_dir, "08-blocks-vs-cudnn.svg"), name)
        summarise_mobilenet(rows, reference, args.batch, ours, v2, v2_batches, device)
    if args.conv3x3_csv:
        layers, device = read_conv3x3(args.conv3x3_csv)
        factors = plot_conv3x3(layers, device, os.path.join(args.out_dir, "08-conv3x3-ladder.svg"), conv_batches,
                               os.path.basename(args.conv3x3_csv))
        summarise_conv3x3(factors, device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
