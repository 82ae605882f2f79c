#!/usr/bin/env python3
"""Lab 07's two plots and its ladder table, drawn from the CSV that bench/lab07_benchmark.py writes.

    python3 bench/plot_lab07.py --csv bench/results/lab07_<gpu>.csv [--out-dir lectures/figures]

Writes, into --out-dir (default lectures/figures):
  07-time-per-image.svg  time per image against the batch size (1 .. 10,000, log-log, mode
                         "device": images and results already in GPU memory) for the CPU, the
                         naive CUDA network (rung 03 = lab 06), cuDNN (lab 05), the optimized
                         network (rung 09 = lab 07's solution), the best rung at each batch, and
                         PyTorch (eager, and as a CUDA graph where the CSV has it);
  07-ladder.svg          the ladder: cumulative speed-up of every rung over rung 01 (or over
                         --baseline) at batch 10,000, mode "device", one bar per rung on a log
                         scale, with cuDNN and PyTorch eager as reference lines;
and prints the lecture's ladder table in Markdown, the comparison rows, and how the issue's
targets came out, so that the numbers in lectures/07-optimized-cuda.md can be filled in from the
same run that drew the pictures.

Only the Python 3 standard library: the SVG is written as text, so anyone can redraw the figures
on their own GPU's CSV without installing anything.

The CSV columns (one row per pipeline, mode and batch; see bench/lab07_benchmark.py):
  source,version,name,mode,batch,median_ms,min_ms,us_per_image,gflop_per_s,percent_fp32_peak,device
source is ladder, cudnn, cpu or pytorch; version is the rung number (ladder rows only); mode is
device, graph or host; a median that is not a number ("n/a": a rung that cannot be captured into a
graph) is skipped. When the same (source, version, name, mode, batch) appears more than once (the
benchmark appends), the last row wins.
"""
import argparse
import collections
import csv
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ["source", "version", "name", "mode", "batch", "median_ms", "min_ms", "us_per_image",
           "gflop_per_s", "percent_fp32_peak", "device"]
FLOPS_PER_IMAGE = 2 * 416520  # 2 FLOPs per multiply-add (course/lenet.hpp)
NAIVE_RUNG = 3                # the lab 06 solution
SOLUTION_RUNG = 9             # the lab 07 solution (lab07::FastLeNet)

# What each rung changes, for the table (the lecture's section per rung says why).
WHAT_CHANGED = {
    1: "one image at a time: malloc, 12 launches, sync, free per image",
    2: "the whole batch per launch; still malloc + sync per layer per call",
    3: "lab 06: buffers allocated once, no synchronisation in forward()",
    4: "conv weights and biases in `__constant__` memory",
    5: "conv input tile (+ halo) staged in shared memory",
    6: "FC layers: a warp per output row, coalesced weight reads",
    7: "conv + bias + ReLU + max-pool fused, one kernel per conv stage",
    8: "the whole network in one kernel, a tile of images per block",
    9: "register blocking (the graded solution, `lab07::FastLeNet`)",
    10: "pinned memory, async copies, streams (matters in host mode)",
    11: "forward() replayed from a CUDA graph (matters at small batches)",
    12: "tensor cores: implicit-GEMM convolutions, reduced precision",
    13: "one image spread over a thread-block cluster (latency; large batches: rung 09)",
    14: "rung 12's network behind rung 10's pinned-memory pipeline (matters in host mode)",
    15: "rung 12 in TF32: FP32 activations, `mma.sync` m16n8k8 (FP16's 10 fraction bits)",
    16: "3xTF32: split operands, three TF32 products per step, FP32 accuracy",
    17: "rung 09 without its shared-memory bank conflicts (rows of 30, image-fastest conv2 lanes)",
    18: "Hopper's `wgmma`: convolutions as warpgroup MMAs on shared-memory tiles, bulk copies",
    19: "rung 13's cluster with its exchanges as `st.async` counted by mbarriers (latency)",
    20: "rung 14 with labels written by the kernels and chunk kernels on two streams (host mode)",
    21: "no copies: rung 12's kernel reads the pinned pixels over PCIe, a step ahead (host mode)",
    22: "rung 19 with every weight in registers before the image lands, 16-byte exchanges (latency)",
    23: "zero copy, 8-image steps handed out by a counter, 2 in flight, fc per step (host mode)",
}
# Rungs that compute on tensor cores, and in what: their "% of FP32 peak" would compare apples with
# pears. (Rung 16 is checked as an FP32 rung, but its arithmetic is the tensor cores'.)
TENSOR_CORE_ARITHMETIC = {12: "FP16", 14: "FP16", 15: "TF32", 16: "3xTF32", 18: "FP16", 20: "FP16",
                          21: "FP16", 23: "FP16"}

HALO = ' stroke="#ffffff" stroke-width="3" paint-order="stroke"'  # keeps a label readable over a line

PALETTE = {
    "cpu": "#7f7f7f", "naive": "#d62728", "cudnn": "#2ca02c", "solution": "#1f77b4",
    "best": "#17becf", "torch_eager": "#ff7f0e", "torch_graph": "#ff7f0e",
}


# ----------------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------------

def number(text):
    """A float, or None for an empty cell or a marker such as "n/a"."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


class Row:
    def __init__(self, cells):
        self.source = cells["source"].strip()
        version = cells["version"].strip()
        self.version = int(version) if version else None
        self.name = cells["name"].strip()
        self.mode = cells["mode"].strip()
        self.batch = int(cells["batch"])
        self.median_ms = number(cells["median_ms"])
        self.min_ms = number(cells["min_ms"])
        self.gflop_per_s = number(cells["gflop_per_s"])
        self.percent_peak = number(cells["percent_fp32_peak"])
        self.device = cells["device"].strip()

    @property
    def us_per_image(self):
        return None if self.median_ms is None else 1000.0 * self.median_ms / self.batch


def read_rows(path):
    """Every usable row of the CSV (last one wins per key), and the GPU's name."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise SystemExit(f"plot_lab07: {path}: missing column(s) {', '.join(missing)}; "
                                 f"expected {','.join(COLUMNS)}")
            latest = collections.OrderedDict()
            for line_number, cells in enumerate(reader, start=2):
                try:
                    row = Row(cells)
                except (ValueError, TypeError, AttributeError) as error:
                    raise SystemExit(f"plot_lab07: {path}:{line_number}: bad row ({error})")
                if row.median_ms is None or row.median_ms <= 0 or row.batch < 1:
                    continue
                latest[(row.source, row.version, row.name, row.mode, row.batch)] = row
    except OSError as error:
        raise SystemExit(f"plot_lab07: cannot read {path}: {error.strerror}")
    rows = list(latest.values())
    if not rows:
        raise SystemExit(f"plot_lab07: {path} holds no timed rows")
    devices = collections.Counter(r.device for r in rows if r.device and r.source != "cpu")
    if len(devices) > 1:
        print(f"plot_lab07: warning: the CSV mixes GPUs ({', '.join(devices)}); "
              f"the title names the most frequent", file=sys.stderr)
    device = devices.most_common(1)[0][0] if devices else "unknown GPU"
    return rows, device


def select(rows, mode="device", **fields):
    """{batch: row} of the rows that match the given fields and mode (mode=None: any mode)."""
    chosen = {}
    for row in rows:
        if mode is not None and row.mode != mode:
            continue
        if all(getattr(row, key) == value for key, value in fields.items()):
            chosen[row.batch] = row
    return chosen


def torch_rows(rows, name):
    """PyTorch's rows of one kind ("pytorch_eager", "pytorch_graph") with the inputs on the GPU:
    whatever mode the torch script names them with, except the host-to-host row; "device" wins."""
    chosen = {}
    for row in rows:
        if row.source == "pytorch" and row.name == name and row.mode != "host":
            if row.batch not in chosen or row.mode == "device":
                chosen[row.batch] = row
    return chosen


def cpu_rows(rows):
    """The CPU has no 'device' mode of its own: take its device rows, else whatever mode it has."""
    for mode in ("device", "host", None):
        chosen = select(rows, mode=mode, source="cpu")
        if chosen:
            return chosen
    return {}


def reduced_precision(row):
    """A ladder rung on tensor cores (TENSOR_CORE_ARITHMETIC: its name need not say so, e.g. 18
    wgmma, 20 host_pipeline_fast, 21 zero_copy_prefetch); every other pipeline in the CSV computes in FP32."""
    return row.source == "ladder" and row.version in TENSOR_CORE_ARITHMETIC


def best_rung_per_batch(rows, mode="device", fp32_only=False):
    """{batch: fastest ladder row} over all rungs (or the FP32 ones only)."""
    best = {}
    for row in rows:
        if row.source != "ladder" or row.mode != mode:
            continue
        if fp32_only and reduced_precision(row):
            continue
        if row.batch not in best or row.median_ms < best[row.batch].median_ms:
            best[row.batch] = row
    return best


# ----------------------------------------------------------------------------------------------
# SVG helpers
# ----------------------------------------------------------------------------------------------

def esc(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fmt_count(value):
    """1, 10, 100, 1,000, 10,000 (the course writes thousands with a comma)."""
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def fmt_time_us(value):
    """A tick label for a time in microseconds: 10 ns, 1 µs, 100 µs, 10 ms, 1 s."""
    if value < 1:
        return f"{value * 1000:g} ns"
    if value < 1000:
        return f"{value:g} µs"
    if value < 1e6:
        return f"{value / 1000:g} ms"
    return f"{value / 1e6:g} s"


def fmt_ms(value):
    """Milliseconds to three significant digits, thousands with a comma."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:#.3g}"


def fmt_factor(value):
    if value < 0.1:
        return f"{value:.2g}×"
    if value >= 100:
        return f"{value:,.0f}×"
    if value >= 10:
        return f"{value:.1f}×"
    return f"{value:.2f}×"


class LogAxis:
    """Maps values on a log10 scale to pixels; the range is widened to whole decades."""

    def __init__(self, low, high, pixel_low, pixel_high):
        self.lo = math.floor(math.log10(low) + 1e-9)
        self.hi = math.ceil(math.log10(high) - 1e-9)
        if self.hi <= self.lo:
            self.hi = self.lo + 1
        self.p0, self.p1 = pixel_low, pixel_high

    def __call__(self, value):
        t = (math.log10(value) - self.lo) / (self.hi - self.lo)
        return self.p0 + t * (self.p1 - self.p0)

    def decades(self):
        return [10.0 ** e for e in range(self.lo, self.hi + 1)]

    def minors(self):
        return [m * 10.0 ** e for e in range(self.lo, self.hi) for m in range(2, 10)]


def svg_document(width, height, title, body):
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" font-family="Helvetica, Arial, sans-serif" font-size="13">\n'
            f'  <title>{esc(title)}</title>\n'
            f'  <rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>\n')
    return head + "".join("  " + line + "\n" for line in body) + "</svg>\n"


def text(x, y, content, anchor="start", fill="#333", size=None, weight=None, extra=""):
    attributes = f'x="{x:.1f}" y="{y:.1f}"'
    if anchor != "start":
        attributes += f' text-anchor="{anchor}"'
    if size:
        attributes += f' font-size="{size}"'
    if weight:
        attributes += f' font-weight="{weight}"'
    return f'<text {attributes} fill="{fill}"{extra}>{esc(content)}</text>'


def marker(shape, x, y, colour, half=4):
    """A data point's marker centred on (x, y); `half` is half its size in pixels (the diamond and
    the triangle's apex reach one pixel further, so that all shapes look the same size)."""
    if shape == "square":
        return f'<rect x="{x - half:.1f}" y="{y - half:.1f}" width="{2 * half:g}" height="{2 * half:g}" fill="{colour}"/>'
    tip = half + 1
    if shape == "diamond":
        return (f'<path d="M {x:.1f} {y - tip:.1f} L {x + tip:.1f} {y:.1f} L {x:.1f} {y + tip:.1f} '
                f'L {x - tip:.1f} {y:.1f} z" fill="{colour}"/>')
    if shape == "triangle":
        return (f'<path d="M {x:.1f} {y - tip:.1f} L {x + tip:.1f} {y + half:.1f} L {x - tip:.1f} {y + half:.1f} z" '
                f'fill="{colour}"/>')
    if shape == "open":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{half:g}" fill="#fff" stroke="{colour}" stroke-width="1.8"/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{half:g}" fill="{colour}"/>'


# ----------------------------------------------------------------------------------------------
# Figure 1: time per image against the batch size
# ----------------------------------------------------------------------------------------------

def time_per_image_series(rows):
    """[(label, {batch: row}, colour, dash, marker shape, annotate rung numbers)] that have data."""
    series = [
        ("CPU, 1 core (golden reference)", cpu_rows(rows), PALETTE["cpu"], "", "square", False),
        ("naive CUDA (rung 03 = lab 06)", select(rows, source="ladder", version=NAIVE_RUNG),
         PALETTE["naive"], "", "circle", False),
        ("cuDNN + cuBLAS (lab 05)", select(rows, source="cudnn"), PALETTE["cudnn"], "", "diamond", False),
        ("PyTorch eager", torch_rows(rows, "pytorch_eager"),
         PALETTE["torch_eager"], "", "triangle", False),
        ("PyTorch, CUDA graph", torch_rows(rows, "pytorch_graph"),
         PALETTE["torch_graph"], "6 4", "open", False),
        ("optimized CUDA (rung 09 = lab 07)", select(rows, source="ladder", version=SOLUTION_RUNG),
         PALETTE["solution"], "", "circle", False),
        ("best rung (its number beside it)", best_rung_per_batch(rows), PALETTE["best"], "3 3",
         "open", True),
    ]
    return [s for s in series if s[1]]


def plot_time_per_image(rows, device, path):
    series = time_per_image_series(rows)
    values = [r.us_per_image for _, points, *_ in series for r in points.values()]
    batches = [b for _, points, *_ in series for b in points]
    if not values:
        raise SystemExit("plot_lab07: no rows for the time-per-image plot")
    width, height = 920, 580
    left, right, top, bottom = 90, 620, 60, 490
    xaxis = LogAxis(min(batches), max(batches), left, right)
    yaxis = LogAxis(min(values), max(values), bottom, top)
    body = [text(20, 30, f"Time per image against the batch size on {device} (images already on the GPU)",
                 size=14, weight="bold")]
    # grid: light minor lines, darker decades
    for v in xaxis.minors():
        body.append(f'<line x1="{xaxis(v):.1f}" y1="{top}" x2="{xaxis(v):.1f}" y2="{bottom}" stroke="#f0f0f0"/>')
    for v in yaxis.minors():
        body.append(f'<line x1="{left}" y1="{yaxis(v):.1f}" x2="{right}" y2="{yaxis(v):.1f}" stroke="#f0f0f0"/>')
    for v in xaxis.decades():
        x = xaxis(v)
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#d0d0d0"/>')
        body.append(text(x, bottom + 18, fmt_count(v), anchor="middle", fill="#555"))
    for v in yaxis.decades():
        y = yaxis(v)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#d0d0d0"/>')
        body.append(text(left - 8, y + 4, fmt_time_us(v), anchor="end", fill="#555"))
    body.append(f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" fill="none" stroke="#555"/>')
    body.append(text((left + right) / 2, bottom + 42, "batch size N (images per forward pass, log scale)",
                     anchor="middle"))
    body.append(text(24, (top + bottom) / 2, "time per image (median of the batch's time / N, log scale)",
                     anchor="middle", extra=f' transform="rotate(-90 24 {(top + bottom) / 2:.1f})"'))
    # the series
    for label, points, colour, dash, shape, annotate in series:
        ordered = sorted(points.items())
        coordinates = " ".join(f"{xaxis(b):.1f},{yaxis(r.us_per_image):.1f}" for b, r in ordered)
        dash_attribute = f' stroke-dasharray="{dash}"' if dash else ""
        body.append(f'<polyline points="{coordinates}" fill="none" stroke="{colour}" stroke-width="2"{dash_attribute}/>')
        for b, r in ordered:
            x, y = xaxis(b), yaxis(r.us_per_image)
            body.append(marker(shape, x, y, colour))
            if annotate and r.version is not None:
                body.append(text(x + 7, y + 15, f"{r.version:02d}", fill="#0e7c86", size=11))
    # legend, right of the plot
    lx, ly = right + 24, top + 10
    body.append(text(lx, ly, "pipeline", weight="bold"))
    for i, (label, points, colour, dash, shape, _) in enumerate(series):
        y = ly + 26 + 26 * i
        dash_attribute = f' stroke-dasharray="{dash}"' if dash else ""
        body.append(f'<line x1="{lx}" y1="{y - 4}" x2="{lx + 34}" y2="{y - 4}" stroke="{colour}" stroke-width="2"{dash_attribute}/>')
        body.append(marker(shape, lx + 17, y - 4, colour))
        body.append(text(lx + 42, y, label, size=12))
    note_y = ly + 26 + 26 * len(series) + 14
    for i, line in enumerate(["Lower is faster. Each point: the median",
                              "time of one forward pass over N images",
                              "(CUDA events; the CPU: wall clock),",
                              "divided by N. A flat line: the cost is",
                              "per image. A line falling with slope -1:",
                              "a fixed cost per call, shared by N images."]):
        body.append(text(lx, note_y + 17 * i, line, fill="#555", size=12))
    body.append(text(20, height - 16, "Drawn by bench/plot_lab07.py from the CSV of bench/lab07_benchmark.py "
                     "(mode 'device'; the PyTorch CUDA graph from mode 'graph').", fill="#555", size=12))
    title = f"Time per image against the batch size, log-log, on {device}"
    write(path, svg_document(width, height, title, body))


# ----------------------------------------------------------------------------------------------
# Figure 2: the ladder as cumulative speed-up
# ----------------------------------------------------------------------------------------------

def ladder_rows(rows, batch, mode="device"):
    """{version: row} of the ladder at one batch size and mode."""
    return {r.version: r for r in rows
            if r.source == "ladder" and r.mode == mode and r.batch == batch and r.version is not None}


def plot_ladder(rows, device, path, batch, baseline):
    rungs = ladder_rows(rows, batch)
    if not rungs:
        raise SystemExit(f"plot_lab07: no ladder rows at batch {batch} in mode 'device'")
    if baseline not in rungs:
        fallback = NAIVE_RUNG if NAIVE_RUNG in rungs else min(rungs)
        print(f"plot_lab07: rung {baseline:02d} has no time at batch {batch}; the ladder plot is "
              f"relative to rung {fallback:02d}", file=sys.stderr)
        baseline = fallback
    base_ms = rungs[baseline].median_ms
    speedups = {v: base_ms / r.median_ms for v, r in rungs.items()}
    references = []
    for label, chosen, colour in (("cuDNN", select(rows, source="cudnn"), PALETTE["cudnn"]),
                                  ("PyTorch eager", torch_rows(rows, "pytorch_eager"),
                                   PALETTE["torch_eager"])):
        if batch in chosen:
            references.append((label, base_ms / chosen[batch].median_ms, colour))

    order = sorted(rungs)
    bar_height, gap = 24, 10
    top = 96
    left, right = 300, 770
    height = top + len(order) * (bar_height + gap) + 110
    width = 920
    all_values = list(speedups.values()) + [v for _, v, _ in references]
    axis = LogAxis(min(1.0, min(all_values)), max(all_values) * 1.5, left, right)
    bottom = top + len(order) * (bar_height + gap)
    body = [text(20, 30, f"The ladder on {device}: speed-up over rung {baseline:02d} at N = {batch:,} "
                 f"(images on the GPU)", size=14, weight="bold"),
            text(20, 52, f"Each bar: rung {baseline:02d}'s median time divided by the rung's (log scale); "
                 f"the label: the factor and the rung's median time.", fill="#555", size=12)]
    for v in axis.minors():
        body.append(f'<line x1="{axis(v):.1f}" y1="{top - 6}" x2="{axis(v):.1f}" y2="{bottom}" stroke="#f0f0f0"/>')
    for v in axis.decades():
        x = axis(v)
        body.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{bottom}" stroke="#d0d0d0"/>')
        body.append(text(x, bottom + 18, fmt_count(v) + "×", anchor="middle", fill="#555"))
    body.append(text((left + right) / 2, bottom + 40, f"speed-up over rung {baseline:02d} (log scale)",
                     anchor="middle"))
    # cuDNN and PyTorch as dashed lines behind the bars; the smaller factor's label goes left of its
    # line, the larger's right of it, so that two close lines do not print over each other
    for i, (label, value, colour) in enumerate(sorted(references, key=lambda r: r[1])):
        x = axis(value)
        body.append(f'<line x1="{x:.1f}" y1="{top - 22}" x2="{x:.1f}" y2="{bottom}" stroke="{colour}" '
                    f'stroke-width="2" stroke-dasharray="6 4"/>')
        anchor, dx = ("end", -5) if i == 0 and len(references) > 1 else ("start", 5)
        body.append(text(x + dx, top - 12, f"{label} {fmt_factor(value)}", anchor=anchor, fill=colour, size=12,
                         weight="bold"))
    for i, version in enumerate(order):
        row = rungs[version]
        y = top + i * (bar_height + gap)
        x1 = axis(speedups[version])
        x0 = axis(10.0 ** axis.lo)
        colour = "#b9b9b9" if version < NAIVE_RUNG else ("#e7a7a5" if version == NAIVE_RUNG else "#8fb3de")
        if version == SOLUTION_RUNG:
            colour = PALETTE["solution"]
        if reduced_precision(row):
            colour = "#b39ddb"
        body.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1.0):.1f}" height="{bar_height}" '
                    f'fill="{colour}" stroke="#555" stroke-width="0.6"/>')
        body.append(text(left - 8, y + 16, f"{version:02d}  {row.name}", anchor="end", size=12))
        body.append(text(x1 + 6, y + 16, f"{fmt_factor(speedups[version])}  ({fmt_ms(row.median_ms)} ms)",
                         size=12, extra=HALO))
    legend_y = bottom + 66
    entries = [("#b9b9b9", "before the naive network"), ("#e7a7a5", "rung 03 = lab 06"),
               ("#8fb3de", "optimization steps"), (PALETTE["solution"], "rung 09 = lab 07's solution"),
               ("#b39ddb", "tensor cores")]
    x = 20
    for colour, label in entries:
        body.append(f'<rect x="{x}" y="{legend_y - 11}" width="14" height="14" fill="{colour}" stroke="#555" stroke-width="0.6"/>')
        body.append(text(x + 20, legend_y, label, size=12))
        x += 30 + 7 * len(label)
    body.append(text(20, legend_y + 26, "Drawn by bench/plot_lab07.py from the CSV of bench/lab07_benchmark.py "
                     "(mode 'device'). Rungs 10 and 11 change the host side and small batches: "
                     "see 07-time-per-image.svg.", fill="#555", size=11))
    title = f"Cumulative speed-up of every rung over rung {baseline:02d} at N = {batch:,} on {device}"
    write(path, svg_document(width, height, title, body))


# ----------------------------------------------------------------------------------------------
# The Markdown table and the targets
# ----------------------------------------------------------------------------------------------

def ladder_table(rows, batch):
    rungs = ladder_rows(rows, batch)
    naive = rungs.get(NAIVE_RUNG)
    lines = [f"| rung | what changed | ms per {batch:,} | speed-up over previous | over naive | GFLOP/s | % of FP32 peak |",
             "|---|---|---:|---:|---:|---:|---:|"]
    previous = None
    for version in sorted(rungs):
        row = rungs[version]
        over_previous = fmt_factor(previous.median_ms / row.median_ms) if previous else "—"
        over_naive = fmt_factor(naive.median_ms / row.median_ms) if naive else "—"
        gflops = row.gflop_per_s if row.gflop_per_s is not None else FLOPS_PER_IMAGE * batch / row.median_ms / 1e6
        peak = f"{row.percent_peak:.1f} %" if row.percent_peak is not None else "—"
        if version in TENSOR_CORE_ARITHMETIC:
            peak = f"— ({TENSOR_CORE_ARITHMETIC[version]})"
        what = WHAT_CHANGED.get(version, row.name)
        lines.append(f"| {version:02d} `{row.name}` | {what} | {fmt_ms(row.median_ms)} | {over_previous} | "
                     f"{over_naive} | {gflops:,.0f} | {peak} |")
        previous = row
    return "\n".join(lines)


def comparison_table(rows, batch):
    naive = ladder_rows(rows, batch).get(NAIVE_RUNG)
    entries = [("cuDNN + cuBLAS (lab 05)", select(rows, source="cudnn")),
               ("PyTorch eager", torch_rows(rows, "pytorch_eager")),
               ("PyTorch, CUDA graph", torch_rows(rows, "pytorch_graph")),
               ("CPU, 1 core (golden reference)", cpu_rows(rows))]
    lines = [f"| pipeline | ms per {batch:,} | µs per image | naive's time / this |", "|---|---:|---:|---:|"]
    for label, chosen in entries:
        if batch in chosen:
            row = chosen[batch]
            ms = row.median_ms
        elif chosen:  # the CPU stops at 1,000 images: time per image is flat, scale it
            largest = max(chosen)
            ms = chosen[largest].median_ms * batch / largest
            label += f" (scaled from N = {largest:,})"
        else:
            continue
        factor = fmt_factor(naive.median_ms / ms) if naive else "—"
        lines.append(f"| {label} | {fmt_ms(ms)} | {1000 * ms / batch:.3g} | {factor} |")
    return "\n".join(lines)


def targets(rows, batch):
    """The issue's three minimums, as measured in this CSV (None where the CSV lacks the rows)."""
    out = []
    best = best_rung_per_batch(rows).get(batch)
    best_fp32 = best_rung_per_batch(rows, fp32_only=True).get(batch)
    eager = torch_rows(rows, "pytorch_eager").get(batch)
    cudnn = select(rows, source="cudnn").get(batch)
    if best:
        line = f"- best rung at N = {batch:,}: {best.version:02d} {best.name}, {fmt_ms(best.median_ms)} ms"
        for label, other in (("PyTorch eager", eager), ("cuDNN", cudnn)):
            if other:
                line += f"; {fmt_factor(other.median_ms / best.median_ms)} faster than {label}"
        out.append(line + " (target: 8×)")
    if best_fp32:
        line = f"- best FP32 rung: {best_fp32.version:02d} {best_fp32.name}, {fmt_ms(best_fp32.median_ms)} ms"
        if eager:
            line += f"; {fmt_factor(eager.median_ms / best_fp32.median_ms)} faster than PyTorch eager"
        out.append(line + " (target: 5×)")
    one = [r for r in rows if r.source == "ladder" and r.batch == 1 and r.mode in ("graph", "device")]
    if one:
        fastest = min(one, key=lambda r: r.median_ms)
        out.append(f"- one image: {1000 * fastest.median_ms:.1f} µs of GPU time, rung {fastest.version:02d} "
                   f"{fastest.name}, mode {fastest.mode} (target: at most 10 µs)")
    host = [r for r in rows if r.source == "ladder" and r.batch == batch and r.mode == "host"]
    if host:
        fastest = min(host, key=lambda r: r.median_ms)
        line = (f"- N = {batch:,} from pinned uint8 host memory to labels on the host: "
                f"{fmt_ms(fastest.median_ms)} ms, rung {fastest.version:02d} {fastest.name}")
        torch_host = [r for r in rows if r.source == "pytorch" and r.batch == batch and r.mode == "host"]
        if torch_host:
            line += f" (PyTorch: {fmt_ms(torch_host[-1].median_ms)} ms)"
        out.append(line + " (target: at most 0.3 ms)")
    # The top of the ladder (issue #19): FP32 at the limit, Hopper's tensor cores, one image, host.
    wgmma = select(rows, source="ladder", version=18).get(batch)
    top = []
    if best_fp32:
        top.append(f"best FP32 {fmt_ms(best_fp32.median_ms)} ms (rung {best_fp32.version:02d}; target <= 0.23)")
    if wgmma:
        top.append(f"wgmma {fmt_ms(wgmma.median_ms)} ms (target <= 0.05)")
    if one:
        top.append(f"one image {1000 * min(r.median_ms for r in one):.1f} µs (target <= 5)")
    if host:
        top.append(f"host to labels {fmt_ms(min(r.median_ms for r in host))} ms (target <= 0.18)")
    if top:
        out.append("- the top of the ladder (issue #19): " + "; ".join(top))
    rungs = ladder_rows(rows, batch)
    if NAIVE_RUNG in rungs:
        naive_ms = rungs[NAIVE_RUNG].median_ms
        factors = ", ".join(f"{v:02d}: {fmt_factor(naive_ms / r.median_ms)}" for v, r in sorted(rungs.items())
                            if v > NAIVE_RUNG)
        out.append(f"- speed-up over naive per rung, for the speed gate's N: {factors}")
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------

def write(path, content):
    """Writes a figure and says so, under the name of the script that drew it (plot_lab08.py and
    plot_host_timeline.py write theirs through this too)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(content)
    print(f"{os.path.splitext(os.path.basename(sys.argv[0]))[0]}: wrote {os.path.relpath(path)}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv", required=True, help="the benchmark's CSV (bench/results/lab07_<gpu>.csv)")
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "lectures", "figures"),
                        help="where the two SVG files go (default: lectures/figures)")
    parser.add_argument("--batch", type=int, default=10000, help="the ladder's batch size (default 10000)")
    parser.add_argument("--baseline", type=int, default=1,
                        help="the rung the ladder plot is relative to (default 1; 3 = the naive network)")
    parser.add_argument("--no-plots", action="store_true", help="print the tables only")
    args = parser.parse_args(argv)
    if args.batch < 1:
        parser.error("--batch must be at least 1")

    rows, device = read_rows(args.csv)
    if not args.no_plots:
        if not os.path.isdir(args.out_dir):
            raise SystemExit(f"plot_lab07: --out-dir {args.out_dir} is not a folder")
        plot_time_per_image(rows, device, os.path.join(args.out_dir, "07-time-per-image.svg"))
        plot_ladder(rows, device, os.path.join(args.out_dir, "07-ladder.svg"), args.batch, args.baseline)
    print(f"\nThe ladder on {device}, N = {args.batch:,}, mode device (median of the timed runs):\n")
    print(ladder_table(rows, args.batch))
    print("\nFor comparison, same run:\n")
    print(comparison_table(rows, args.batch))
    print("\nThe issue's targets:\n")
    print(targets(rows, args.batch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
