#!/usr/bin/env python3
"""Recomputes every derived number of chapter 8 (lectures/08-conv-algorithms.md) except the
Winograd example, which lectures/tools/winograd_example.py checks.

Plain Python. Sections: im2col (the tiny example and ResNet-50's 3x3 layers at batch 32), GEMM
tiles, FFT spectra, depthwise/pointwise intensities and the fused inverted residual, the course's
MobileNetV2 (block table, multiply-adds, parameters), the depthwise table drawn from
bench/results/lab08_depthwise_h100_80gb_hbm3.txt, and section 10's tables drawn from
bench/results/lab08_conv3x3_h100_80gb_hbm3.csv (times, TFLOP/s, cudnnFind's order) and the notes
column of bench/results/lab08_conv3x3_h100_80gb_hbm3.txt (im2col's share of v3, the _v7 heuristic).

Usage: python3 lectures/tools/ch08_numbers.py   (from the repository root)
"""
import csv
import os
import re
from collections import OrderedDict

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FP32_PEAK, HBM = 66.9e12, 3.35e12  # H100 SXM, chapter 7 section 1
TF32_PEAK = 495e12  # H100 SXM, dense, chapter 7 section 15


def section(title):
    print(f"\n== {title} ==")


def im2col_example():
    section("im2col: C = 1, 4x4 input, 3x3 filter, no padding")
    d = [[1, 2, 0, 1], [0, 1, 3, 2], [2, 1, 0, 1], [1, 0, 2, 3]]
    g = [[1, 0, -1], [2, 1, 0], [0, 1, 1]]
    cols = [[d[p + r][q + s] for r in range(3) for s in range(3)] for p in range(2) for q in range(2)]
    for t in range(9):
        print("   " + "  ".join(f"{cols[j][t]:2d}" for j in range(4)))
    frow = [g[r][s] for r in range(3) for s in range(3)]
    print("filter row:", frow, "-> outputs", [sum(a * b for a, b in zip(frow, c)) for c in cols])


def resnet_im2col():
    section("ResNet-50's 3x3 layers (pad 1, stride 1), batch N = 32, FP32")
    n = 32
    for h, c in ((56, 64), (28, 128), (14, 256), (7, 512)):
        k, p = c, h
        inp, col = n * c * h * h * 4, c * 9 * n * p * p * 4
        filt, out = k * c * 9 * 4, n * k * p * p * 4
        flops = 2 * k * c * 9 * n * p * p
        print(f"{h}x{h}x{c}: M_gemm {k}, N_gemm {n * p * p:,}, K_gemm {c * 9:,}; input {inp:,} B, "
              f"im2col {col:,} B ({col / inp:.0f}x), filters {filt:,} B, output {out:,} B; "
              f"{flops / 1e9:.2f} GFLOP = {flops / FP32_PEAK * 1e3:.3f} ms at 66.9 TFLOP/s; "
              f"im2col written and read back: {2 * col / HBM * 1e3:.3f} ms at 3.35 TB/s")
        # Winograd on the same layer
        t2, t4 = n * (-(-p // 2)) ** 2, n * (-(-p // 4)) ** 2  # tiles cover the output, the last ones partly
        direct = k * c * 9 * n * p * p
        w2, w4 = 16 * k * c * t2, 36 * k * c * t4
        print(f"   Winograd: F(2x2) {t2:,} tiles, 16 GEMMs [{k}x{c}]x[{c}x{t2:,}], {direct / w2:.2f}x fewer "
              f"multiplies, V {16 * c * t2 * 4:,} B; F(4x4) {t4:,} tiles, 36 GEMMs, {direct / w4:.2f}x, "
              f"V {36 * c * t4 * 4:,} B")
        # FFT spectra at 64 x 64 (58 = 56 + 2 padded, rounded up to a power of two), real-to-complex
        if h == 56:
            plane = 64 * 33 * 8
            print(f"   FFT at 64x64: {plane:,} B per half spectrum; inputs {n * c * plane:,} B, "
                  f"filters {k * c * plane:,} B ({plane / 36:.0f}x a 3x3 filter), outputs {n * k * plane:,} B")


def tiles():
    section("GEMM tiles")
    for bm, bn in ((32, 32), (64, 64), (128, 128), (128, 256)):
        print(f"block tile {bm}x{bn}: {bm * bn / (2 * (bm + bn)):.1f} FLOPs per byte loaded (FP32)")
    print(f"H100 balance: FP32 {FP32_PEAK / HBM:.1f}, TF32 {495e12 / HBM:.0f}, FP16 {989e12 / HBM:.0f} FLOPs per byte")
    for tm, tn in ((1, 1), (4, 4), (8, 8)):
        print(f"thread tile {tm}x{tn}: {tm + tn} shared loads for {tm * tn} FMAs = {tm * tn / (tm + tn):.2f} FMAs per load")
    bm, bn, bk = 128, 128, 8
    print(f"shared memory for {bm}x{bn}x{bk}: {(bm * bk + bk * bn) * 4:,} B per stage")
    print(f"sep. 3x3 + 1x1 vs full 3x3, C = K = 64: {(9 + 64) / (9 * 64):.3f} of the MACs = {9 * 64 / (9 + 64):.1f}x fewer")


def intensities():
    section("Arithmetic intensity, FP32, one read of the input and one write of the output per layer")
    print(f"depthwise 3x3, stride 1: 18 FLOPs / 8 B = {18 / 8}")
    for c, k in ((24, 144), (144, 24), (16, 96), (64, 384), (160, 960), (960, 160), (320, 1280)):
        print(f"1x1 {c} -> {k}: {c * k / (2 * (c + k)):.1f} FLOPs per byte")
    print(f"3x3 64 -> 64: {2 * 9 * 64 * 64 / (4 * 128):.0f} FLOPs per byte")
    c, t, h = 24, 6, 56
    e = c * t
    macs = c * e + e * 9 + e * c
    unfused = (c + e) + (e + e) + (e + c) + c  # expand, depthwise, project, residual read
    fused = c + c
    print(f"block 56x56, {c} -> {e} -> {c}: {2 * macs:,} FLOPs per pixel; unfused {unfused} floats per pixel "
          f"= {2 * macs / (4 * unfused):.1f} FLOPs/B, {h * h * unfused * 4:,} B per image; fused {fused} floats "
          f"= {2 * macs / (4 * fused):.1f} FLOPs/B, {h * h * fused * 4:,} B per image ({unfused / fused:.1f}x less)")
    for tile in (4, 8, 14):
        print(f"fused tile {tile}x{tile} outputs: expand on {(tile + 2) ** 2} pixels, {(tile + 2) ** 2 / tile ** 2:.2f}x")


def course_mobilenet():
    section("The course's MobileNetV2 (common/include/course/mobilenet.hpp)")
    stages = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 2, 2), (6, 64, 2, 1)]
    cin, size = 16, 28
    macs = {"stem": 28 * 28 * 16 * 9, "expand": 0, "depthwise": 0, "project": 0}
    params = 16 * 9 + 2 * 16
    i = 0
    for t, c, n, s in stages:
        for r in range(n):
            st = s if r == 0 else 1
            hid, out = cin * t, (size - 1) // st + 1
            e = size * size * cin * hid if t != 1 else 0
            dw, pr = out * out * hid * 9, out * out * hid * c
            macs["expand"] += e
            macs["depthwise"] += dw
            macs["project"] += pr
            params += (cin * hid + 2 * hid if t != 1 else 0) + hid * 9 + 2 * hid + hid * c + 2 * c
            res = "yes" if st == 1 and cin == c else "no"
            print(f"| {i} | {size}x{size}x{cin} | {t} | {hid} | {st} | {out}x{out}x{c} | {res} | {e:,} | {dw:,} | {pr:,} | "
                  f"expanded {size}x{size}x{hid} = {size * size * hid * 4:,} B per image")
            cin, size, i = c, out, i + 1
    macs["head"] = 7 * 7 * 64 * 256
    macs["classifier"] = 256 * 10
    params += 64 * 256 + 2 * 256 + 256 * 10 + 10
    total = sum(macs.values())
    print("MACs per image:", {k: f"{v:,} ({100 * v / total:.1f} %)" for k, v in macs.items()})
    print(f"total {total:,} multiply-adds per image ({total / 416520:.1f}x LeNet's 416,520); {params:,} parameters")


def depthwise_table():
    section("bench/results/lab08_depthwise_h100_80gb_hbm3.txt")
    path = os.path.join(ROOT, "bench", "results", "lab08_depthwise_h100_80gb_hbm3.txt")
    pat = re.compile(r"\|\s*(\d+)\s*\|\s*(\d+)x\s*(\d+)x\s*(\d+)\s*\|\s*(\d)\s*\|\s*(.+?)\s*\|\s*([\d.]+)\s*\|\s*(\d+)\s*\|\s*([\d.]+)\s*\|")
    groups = OrderedDict()
    for line in open(path, encoding="utf-8"):
        m = pat.match(line)
        if m:
            b, h, _, c, s, ver, ms, gbs, x = m.groups()
            groups.setdefault((h, c, s), {}).setdefault(b, []).append((ver, float(ms), int(gbs), x))
    wins = {"v3": 0, "v4": 0}
    rows = 0
    for (h, c, s), by_batch in groups.items():
        cells = []
        for b in ("32", "256"):
            rows_ = by_batch[b]
            best = min((r for r in rows_ if r[0].startswith("cudnn")), key=lambda r: r[1])
            v3 = next(r for r in rows_ if r[0] == "v3")
            v4 = next(r for r in rows_ if r[0] == "v4")
            rows += 1
            for v in (v3, v4):
                wins[v[0]] += float(v[3]) > 1.0
            cells.append(f"`{best[0][6:]}` {best[1]:.4f} ({best[2]:,}) | {v3[1]:.4f} ({v3[3]}) | "
                         f"{v4[1]:.4f} ({v4[2]:,}) | {v4[3]}")
        print(f"| {h}x{h}x{c} | {s} | " + " | ".join(cells) + " |")
    print(f"faster than cuDNN's best: v3 in {wins['v3']} of {rows} rows, v4 in {wins['v4']} of {rows} rows")
    for algo in ("WINOGRAD_NONFUSED", "FFT", "FFT_TILING"):
        ratios = []
        for (h, c, s), by_batch in groups.items():
            for b, rows_ in by_batch.items():
                best = min(r[1] for r in rows_ if r[0].startswith("cudnn"))
                ratios += [(r[1] / best, f"{h}x{h}x{c} s{s} batch {b}") for r in rows_ if r[0] == "cudnn " + algo]
        print(f"{algo}: {min(ratios)[0]:.1f} to {max(ratios)[0]:.0f} times cuDNN's best (worst: {max(ratios)[1]})")


# ---- section 10: bench/results/lab08_conv3x3_h100_80gb_hbm3.csv ---------------------------------------
CONV3X3 = os.path.join(ROOT, "bench", "results", "lab08_conv3x3_h100_80gb_hbm3")
STAGE = {("56", "1"): "conv2_x", ("28", "1"): "conv3_x", ("14", "1"): "conv4_x", ("7", "1"): "conv5_x",
         ("56", "2"): "conv3_1", ("28", "2"): "conv4_1", ("14", "2"): "conv5_1"}


class Run:
    """One batch of one layer: cuDNN's rows per pass in cudnnFind's order, the choice rows, ours."""

    def __init__(self, batch, h, c, stride):
        self.batch, self.h, self.c, self.stride = batch, h, c, stride
        self.fp32, self.tc, self.choice, self.ours, self.notes = [], [], [], {}, {}

    def label(self):
        return f"{self.h} × {self.h} × {self.c}"

    def best(self, rows):
        return min(rows, key=lambda r: r["ms"])

    def best_fp32(self):
        return self.best(self.fp32)

    def best_tc(self):
        return self.best(self.tc)

    def algo(self, name, math="fp32"):
        """cuDNN's row for an algorithm in the FMA pass (math fp32), or None where not offered."""
        return next((r for r in self.fp32 if r["version"] == "cudnn " + name and r["math"] == math), None)


def load_conv3x3():
    runs = OrderedDict()
    with open(CONV3X3 + ".csv", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            key = (r["batch"], r["H"], r["C"], r["stride"])
            run = runs.setdefault(key, Run(*key))
            r["ms"] = float(r["median_ms"]) if r["median_ms"] else None
            r["tflops"] = float(r["tflops"]) if r["tflops"] else None
            v = r["version"]
            if v.startswith("cudnn choice: "):
                run.choice.append(r)  # the FMA pass's first, then the tensor-op pass's
            elif v.startswith("cudnn "):
                (run.fp32 if r["math"] == "fp32" else run.tc).append(r)  # rows in Find's order
            else:
                run.ours[v.split()[0] if not v.startswith("v5 filter") else "v5f"] = r
    # the notes column of the printed table: im2col's share of v3, the heuristic's pick, errors
    pat = re.compile(r"\|\s*(\d+) \| (\d+)x\d+x(\d+)->\d+ s(\d)\s*\| (.+?)\s*\| (\S+)\s*\|.*\|\s*(\S+)\s*\| (.*)$")
    with open(CONV3X3 + ".txt", encoding="utf-8") as f:
        for line in f:
            m = pat.match(line)
            if m:
                b, h, c, s, ver, math, err, note = m.groups()
                runs[(b, h, c, s)].notes[(ver.strip(), math)] = (err, note.strip())
    return runs


def ms_x(row, ref):
    """'0.5402 (0.31)': the time and cuDNN's reference time divided by it."""
    return f"{row['ms']:.4f} ({ref / row['ms']:.2f})" if row["ms"] else "n/a"


def conv3x3_tables():
    section(os.path.relpath(CONV3X3, ROOT) + ".csv (and .txt for the notes)")
    runs = load_conv3x3()
    first = next(iter(runs.values()))
    gpu = next(r["gpu"] for r in first.fp32)
    print(f"{gpu}, cuDNN {first.fp32[0]['cudnn_version']}; times in ms, (x) = cuDNN's time / this time")
    layers = OrderedDict(((r.h, r.c, r.stride), None) for r in runs.values())
    get = lambda b, lay: runs[(b,) + lay]

    for b in ("32", "256"):
        print(f"\n-- every FP32 version against cuDNN's best FP32, batch {b} --")
        print("| input, channels | s | cuDNN's best FP32, ms (TFLOP/s) | v2 im2col + tiled | v3 im2col + cuBLAS "
              "| v4 implicit GEMM | v5 Winograd | our best FP32 |")
        print("|---|---|---|---|---|---|---|---|")
        for lay in layers:
            run = get(b, lay)
            best = run.best_fp32()
            cells = [ms_x(run.ours[v], best["ms"]) for v in ("v2", "v3", "v4", "v5")]
            mine = min((run.ours[v] for v in ("v1", "v2", "v3", "v4", "v5") if run.ours[v]["ms"]), key=lambda r: r["ms"])
            print(f"| {run.label()} | {run.stride} | `{best['version'][6:]}` {best['ms']:.4f} ({best['tflops']:.1f}) | "
                  + " | ".join(cells) + f" | {mine['version'].split()[0]}, {best['ms'] / mine['ms']:.2f} |")

    print("\n-- batch 1 --")
    print("| input, channels | s | cuDNN's best FP32 | v3 im2col + cuBLAS | v5 Winograd | cuDNN's best, tensor ops allowed "
          "| v6 TF32 | v7 TF32 | v8 TF32 | v9 TF32 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for lay in layers:
        run = get("1", lay)
        bf, bt = run.best_fp32(), run.best_tc()
        print(f"| {run.label()} | {run.stride} | `{bf['version'][6:]}` {bf['ms']:.4f} | {ms_x(run.ours['v3'], bf['ms'])} | "
              f"{ms_x(run.ours['v5'], bf['ms'])} | `{bt['version'][6:]}` ({bt['math']}) {bt['ms']:.4f} | "
              f"{ms_x(run.ours['v6'], bt['ms'])} | {ms_x(run.ours['v7'], bt['ms'])} | {ms_x(run.ours['v8'], bt['ms'])} | "
              f"{ms_x(run.ours['v9'], bt['ms'])} |")

    print("\n-- Winograd: v5 against cuDNN's WINOGRAD_NONFUSED (FMA math); fused WINOGRAD is not offered --")
    print("| input, channels | batch 1: v5 | `WINOGRAD_NONFUSED` | × | batch 32: v5 | `WINOGRAD_NONFUSED` | × "
          "| batch 256: v5 | `WINOGRAD_NONFUSED` | × | filter transform (once) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for lay in layers:
        if lay[2] != "1":
            continue
        cells = []
        for b in ("1", "32", "256"):
            run = get(b, lay)
            v5, wn = run.ours["v5"], run.algo("WINOGRAD_NONFUSED")
            cells.append(f"{v5['ms']:.4f} ({v5['tflops']:.1f}) | {wn['ms']:.4f} ({wn['tflops']:.1f}) | {wn['ms'] / v5['ms']:.2f}")
        print(f"| {get('32', lay).label()} | " + " | ".join(cells) + f" | {get('32', lay).ours['v5f']['ms']:.4f} |")

    print("\n-- tensor cores: v6 (TF32 WMMA), v7 (TF32 mma.sync, pipelined), v8 (v7 + ldmatrix) and v9 (NHWC copy, "
          "16-byte copies) against cuDNN's best row with TENSOR_OP_MATH_ALLOW_CONVERSION; × = that row's time / v9's --")
    print("| input, channels | s | batch 32: cuDNN's best, ms (TFLOP/s) | v6 | v7 | v8 | v9 | × | batch 256: cuDNN's best "
          "| v6 | v7 | v8 | v9 | × |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for lay in layers:
        cells = []
        for b in ("32", "256"):
            run = get(b, lay)
            bt, v6, v7, v8, v9 = run.best_tc(), run.ours["v6"], run.ours["v7"], run.ours["v8"], run.ours["v9"]
            cells.append(f"`{bt['version'][6:]}` ({bt['math']}) {bt['ms']:.4f} ({bt['tflops']:.0f}, "
                         f"{100 * bt['tflops'] * 1e12 / TF32_PEAK:.0f} %) | {v6['ms']:.4f} ({v6['tflops']:.1f}) | "
                         f"{v7['ms']:.4f} ({v7['tflops']:.1f}) | {v8['ms']:.4f} ({v8['tflops']:.1f}) | "
                         f"{v9['ms']:.4f} ({v9['tflops']:.1f}) | {bt['ms'] / v9['ms']:.2f}")
        print(f"| {get('32', lay).label()} | {lay[2]} | " + " | ".join(cells) + " |")

    print("\n-- what cuDNN chose: cudnnFind's first entry per pass, the fastest in our timing where another --")
    print("| input, channels | s | batch | FMA math: Find's first, ms | fastest in our timing | `_v7` heuristic "
          "| tensor ops allowed: Find's first, ms | fastest in our timing |")
    print("|---|---|---|---|---|---|---|---|")
    misranked = []
    for lay in layers:
        for b in ("1", "32", "256"):
            run = get(b, lay)
            cells = []
            for i, rows in enumerate((run.fp32, run.tc)):
                ch, fast = run.choice[i], run.best(rows)
                assert ch["version"][14:] == rows[0]["version"][6:] and ch["ms"] == rows[0]["ms"]
                math = "" if i == 0 else f" ({ch['math']})"
                cells.append(f"`{ch['version'][14:]}`{math} {ch['ms']:.4f}")
                if fast is rows[0]:
                    cells.append("same")
                else:
                    fm = "" if i == 0 else f" ({fast['math']})"
                    cells.append(f"`{fast['version'][6:]}`{fm} {fast['ms']:.4f} ({ch['ms'] / fast['ms']:.2f}×)")
                    misranked.append((ch["ms"] / fast["ms"], f"batch {b} {run.label()} s{run.stride} "
                                      f"{'FMA' if i == 0 else 'tensor-op'}: {ch['version'][14:]} ({ch['math']}) "
                                      f"{ch['ms']:.4f} vs {fast['version'][6:]} ({fast['math']}) {fast['ms']:.4f}"))
                if i == 0:
                    note = run.notes[(ch["version"], ch["math"])][1]
                    heur = re.search(r"heuristic picks (\S+)", note).group(1)
                    cells.append(f"`{heur}`")
            print(f"| {run.label()} | {run.stride} | {b} | " + " | ".join(cells) + " |")
    print("Find's first slower than the fastest row of its pass in our timing:")
    for ratio, what in sorted(misranked, reverse=True):
        print(f"   {ratio:.2f}x  {what}")
    wn = get("32", ("56", "64", "1"))
    print("56x56x64 batch 32, WINOGRAD_NONFUSED in both passes (ms, err):",
          [(r["math"], f"{r['ms']:.4f}", run_err) for r in wn.fp32 + wn.tc if r["version"] == "cudnn WINOGRAD_NONFUSED"
           for run_err in [wn.notes[(r["version"], r["math"])][0]]],
          "| batch 256 FMA:", f"{get('256', ('56', '64', '1')).algo('WINOGRAD_NONFUSED')['ms']:.4f}")

    print("\n-- v3's im2col share and the matrix (notes column) --")
    for lay in layers:
        parts = []
        for b in ("1", "32", "256"):
            note = get(b, lay).notes[("v3 im2col + cuBLAS SGEMM", "fp32")][1]
            m = re.search(r"im2col ([\d.]+) ms = (\d+)% .*matrix ([\d.]+) GiB = ([\d.]+)x", note)
            parts.append(f"batch {b}: {m.group(1)} ms = {m.group(2)} % of {get(b, lay).ours['v3']['ms']:.4f}"
                         f" (matrix {m.group(3)} GiB, {m.group(4)}x the input)")
        print(f"{get('32', lay).label()} s{lay[2]}: " + "; ".join(parts))
    run = get("32", ("56", "64", "1"))
    im2col_ms = float(re.search(r"im2col ([\d.]+) ms", run.notes[("v3 im2col + cuBLAS SGEMM", "fp32")][1]).group(1))
    mat = 576 * 100352 * 4
    print(f"56x56x64 batch 32: im2col writes {mat:,} B in {im2col_ms} ms = {mat / im2col_ms / 1e6:,.0f} GB/s "
          f"({100 * mat / im2col_ms * 1e3 / HBM:.0f} % of 3.35 TB/s); "
          f"the GEMM part {run.ours['v3']['ms'] - im2col_ms:.4f} ms = "
          f"{2 * 64 * 576 * 100352 / 1e9 / (run.ours['v3']['ms'] - im2col_ms):.1f} TFLOP/s")

    print("\n-- targets: best FP32 >= 1/2 of cuDNN's best FP32; v5 >= 1/1.5 of WINOGRAD_NONFUSED; "
          "v9 >= 1/1.5 of cuDNN's tensor-op choice (and of its fastest tensor-op row) --")
    print("| input, channels | s | batch 32: best FP32 | Winograd | tensor cores: choice | fastest row "
          "| batch 256: best FP32 | Winograd | tensor cores: choice | fastest row |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    yes = lambda x, bar: f"{'**yes**' if x >= bar else 'no'} ({x:.2f})"
    met = {"fp32": 0, "wino": 0, "tc": 0, "tc_best": 0, "v8_tc": 0, "v8_tc_best": 0}
    for lay in layers:
        cells = []
        for b in ("32", "256"):
            run = get(b, lay)
            mine = min(run.ours[v]["ms"] for v in ("v1", "v2", "v3", "v4", "v5") if run.ours[v]["ms"])
            x = run.best_fp32()["ms"] / mine
            met["fp32"] += x >= 0.5
            cells.append(yes(x, 0.5))
            wn = run.algo("WINOGRAD_NONFUSED")
            if wn and run.ours["v5"]["ms"]:
                x = wn["ms"] / run.ours["v5"]["ms"]
                met["wino"] += x >= 1 / 1.5
                cells.append(yes(x, 1 / 1.5))
            else:
                cells.append("—")
            x = run.choice[1]["ms"] / run.ours["v9"]["ms"]
            met["tc"] += x >= 1 / 1.5
            cells.append(yes(x, 1 / 1.5))
            x = run.best_tc()["ms"] / run.ours["v9"]["ms"]
            met["tc_best"] += x >= 1 / 1.5
            cells.append(yes(x, 1 / 1.5))
            met["v8_tc"] += run.choice[1]["ms"] / run.ours["v8"]["ms"] >= 1 / 1.5
            met["v8_tc_best"] += run.best_tc()["ms"] / run.ours["v8"]["ms"] >= 1 / 1.5
        print(f"| {get('32', lay).label()} | {lay[2]} | " + " | ".join(cells) + " |")
    print("met (of 14, 8, 14, 14; v8's in the same run):", met)
    margin = sorted((r.best_tc()["ms"] / r.ours["v9"]["ms"], f"{r.label()} s{r.stride} b{r.batch}")
                    for r in runs.values() if r.batch != "1")
    print(f"v9 / cuDNN's fastest tensor-op row, batch 32 and 256: {margin[0][0]:.2f} ({margin[0][1]}) to "
          f"{margin[-1][0]:.2f} ({margin[-1][1]}); ahead on {sum(m >= 1 for m, _ in margin)}")
    print("v9 per run (batch 32, 256): v8 ms, v9 ms, v8/v9, choice/v9, fastest/v9, note:")
    for r in runs.values():
        if r.batch != "1":
            v8, v9 = r.ours["v8"]["ms"], r.ours["v9"]["ms"]
            note = r.notes[(r.ours["v9"]["version"], "tf32")][1]
            print(f"   {r.label()} s{r.stride} b{r.batch}: {v8:.4f} {v9:.4f} {v8 / v9:.2f} {r.choice[1]['ms'] / v9:.2f} "
                  f"{r.best_tc()['ms'] / v9:.2f} ({note})")
    need = [(r.ours["v7"]["ms"] / r.choice[1]["ms"] / 1.5, f"{r.label()} s{r.stride} b{r.batch}")
            for r in runs.values() if r.batch != "1" and r.ours["v7"]["ms"] / r.choice[1]["ms"] > 1.5]
    print(f"v7 needs {min(need)[0]:.2f} ({min(need)[1]}) to {max(need)[0]:.2f} ({max(need)[1]}) times its speed "
          f"where it misses the target")
    need = [(r.ours["v8"]["ms"] / r.choice[1]["ms"] / 1.5, f"{r.label()} s{r.stride} b{r.batch}")
            for r in runs.values() if r.batch != "1" and r.ours["v8"]["ms"] / r.choice[1]["ms"] > 1.5]
    print(f"v8 needs {min(need)[0]:.2f} ({min(need)[1]}) to {max(need)[0]:.2f} ({max(need)[1]}) times its speed "
          f"where it misses the target")
    print("v8 per run (batch 32, 256): v7 ms, v8 ms, v7/v8, choice/v7, choice/v8, tile:")
    for r in runs.values():
        if r.batch != "1":
            v7, v8, ch = r.ours["v7"]["ms"], r.ours["v8"]["ms"], r.choice[1]["ms"]
            note = r.notes[(r.ours["v8"]["version"], "tf32")][1]
            print(f"   {r.label()} s{r.stride} b{r.batch}: {v7:.4f} {v8:.4f} {v7 / v8:.2f} {ch / v7:.2f} {ch / v8:.2f} "
                  f"({note})")
    pc = sorted((100 * r.choice[1]["tflops"] * 1e12 / TF32_PEAK, f"{r.label()} s{r.stride} b{r.batch}")
                for r in runs.values() if r.batch != "1")
    print(f"cuDNN's tensor-op choice: {pc[0][0]:.1f} % ({pc[0][1]}) to {pc[-1][0]:.1f} % ({pc[-1][1]}) of the TF32 peak; "
          f"within 1.5x of it: {pc[0][0] / 1.5:.1f} to {pc[-1][0] / 1.5:.1f} %")
    v4_ok = [f"{r.label()} s{r.stride} b{r.batch} {r.best_fp32()['ms'] / r.ours['v4']['ms']:.2f}" for r in runs.values()
             if r.batch != "1" and r.best_fp32()["ms"] / r.ours["v4"]["ms"] >= 0.5]
    print("v4 alone within 2x of cuDNN's best FP32:", v4_ok)
    need4 = [0.5 * r.ours["v4"]["ms"] / r.best_fp32()["ms"] for r in runs.values() if r.batch != "1" and r.stride == "1"]
    print(f"v4 needs {min(need4):.2f} to {max(need4):.2f} times its speed to come within 2x "
          f"of cuDNN's best FP32 on the stride-1 layers")
    for v in ("v2", "v4", "v6", "v7", "v8", "v9"):
        t = [run.ours[v]["tflops"] for run in runs.values() if run.batch != "1"]
        print(f"{v} at batch 32 and 256: {min(t):.1f} to {max(t):.1f} TFLOP/s")
    tcx = [r.best_fp32()["ms"] / r.best_tc()["ms"] for r in runs.values() if r.batch != "1"]
    print(f"cuDNN's best tensor-op row / best FP32, batch 32 and 256: {min(tcx):.2f} to {max(tcx):.2f} times faster")

    print("\n-- ranges --")
    def rng(version, ref, batches=("32", "256"), stride=None):
        xs = []
        for run in runs.values():
            if run.batch in batches and (stride is None or run.stride == stride) and run.ours[version]["ms"]:
                xs.append((ref(run) / run.ours[version]["ms"], f"{run.label()} s{run.stride} b{run.batch}"))
        return f"{min(xs)[0]:.2f} ({min(xs)[1]}) to {max(xs)[0]:.2f} ({max(xs)[1]})"
    fp = lambda run: run.best_fp32()["ms"]
    for v in ("v1", "v2", "v3", "v4", "v5"):
        print(f"{v} / cuDNN's best FP32, batch 32 and 256: {rng(v, fp)}; batch 1: {rng(v, fp, ('1',))}")
    print(f"v5 / WINOGRAD_NONFUSED, batch 32 and 256: {rng('v5', lambda r: r.algo('WINOGRAD_NONFUSED')['ms'])}")
    print(f"v6 / cuDNN's best tensor-op row, batch 32 and 256: {rng('v6', lambda r: r.best_tc()['ms'])}; "
          f"batch 1: {rng('v6', lambda r: r.best_tc()['ms'], ('1',))}")
    print(f"v6 / cuDNN's tensor-op choice, batch 32 and 256: {rng('v6', lambda r: r.choice[1]['ms'])}")
    for b in ("1", "32", "256"):
        print(f"v7 / cuDNN's tensor-op choice, batch {b}: {rng('v7', lambda r: r.choice[1]['ms'], (b,))}; "
              f"/ cuDNN's best tensor-op row: {rng('v7', lambda r: r.best_tc()['ms'], (b,))}")
    print(f"v6's time / v7's, batch 1: {rng('v7', lambda r: r.ours['v6']['ms'], ('1',))}; "
          f"batch 32 and 256: {rng('v7', lambda r: r.ours['v6']['ms'])}")
    print(f"v4's time / v7's, batch 32 and 256: {rng('v7', lambda r: r.ours['v4']['ms'])}")
    for b in ("1", "32", "256"):
        print(f"v8 / cuDNN's tensor-op choice, batch {b}: {rng('v8', lambda r: r.choice[1]['ms'], (b,))}; "
              f"/ cuDNN's best tensor-op row: {rng('v8', lambda r: r.best_tc()['ms'], (b,))}; "
              f"v7's time / v8's: {rng('v8', lambda r: r.ours['v7']['ms'], (b,))}")
    for b in ("1", "32", "256"):
        print(f"v9 / cuDNN's tensor-op choice, batch {b}: {rng('v9', lambda r: r.choice[1]['ms'], (b,))}; "
              f"/ cuDNN's best tensor-op row: {rng('v9', lambda r: r.best_tc()['ms'], (b,))}; "
              f"v8's time / v9's: {rng('v9', lambda r: r.ours['v8']['ms'], (b,))}")
    print(f"v7 / cuDNN's best FP32, batch 32 and 256: {rng('v7', fp)}")
    peak = open(CONV3X3.replace("conv3x3_h100", "conv3x3_mma_peak_h100") + ".txt", encoding="utf-8").read()
    mma_peak = float(re.search(r"registers: ([\d.]+) TFLOP/s", peak).group(1))
    v7max = max(r.ours["v7"]["tflops"] for r in runs.values())
    print(f"mma.sync m16n8k8 TF32 on register operands: {mma_peak} TFLOP/s = {100 * mma_peak * 1e12 / TF32_PEAK:.0f} % "
          f"of 495; v7 at most {v7max:.1f} TFLOP/s = {100 * v7max / mma_peak:.0f} % of it; cuDNN's tensor-op choice "
          f"above it: " + ", ".join(f"{r.label()} s{r.stride} b{r.batch} {r.choice[1]['tflops']:.1f}"
                                    for r in runs.values() if r.choice[1]["tflops"] > mma_peak))
    for b in ("32", "256"):
        print(f"v7 TFLOP/s at batch {b}: " + ", ".join(f"{r.label()} s{r.stride} {r.ours['v7']['tflops']:.1f}"
                                                   f" ({r.notes[(r.ours['v7']['version'], 'tf32')][1]})"
                                                   for r in runs.values() if r.batch == b))
    print(f"v4 / v6 (what the tensor cores bought), batch 32 and 256: {rng('v6', lambda r: r.ours['v4']['ms'])}")
    print(f"v2 / v4 (implicit against explicit, same kernel), batch 32 and 256: {rng('v4', lambda r: r.ours['v2']['ms'])}")
    for tile in ("128x128", "64x64"):
        xs = [r.ours["v2"]["ms"] / r.ours["v4"]["ms"] for r in runs.values() if r.batch != "1"
              and r.notes[("v4 implicit GEMM", "fp32")][1].startswith(tile)]
        print(f"   v2 / v4 with {tile} tiles: {min(xs):.2f} to {max(xs):.2f} ({len(xs)} runs)")
    tf = [(r.best_tc()["tflops"], f"{r.label()} s{r.stride} b{r.batch}") for r in runs.values() if r.batch != "1"]
    ours = [(r.ours["v6"]["tflops"], f"{r.label()} s{r.stride} b{r.batch}") for r in runs.values() if r.batch != "1"]
    print(f"cuDNN's best tensor-op TFLOP/s, batch 32 and 256: {min(tf)[0]:.1f} to {max(tf)[0]:.1f} ({max(tf)[1]}) = "
          f"{100 * min(tf)[0] * 1e12 / TF32_PEAK:.0f} to {100 * max(tf)[0] * 1e12 / TF32_PEAK:.0f} % of 495; "
          f"v6 {min(ours)[0]:.1f} to {max(ours)[0]:.1f} ({max(ours)[1]})")
    fp32_err = lambda pred: max(float(e) for run in runs.values() for (v, m), (e, _) in run.notes.items()
                                if e != "-" and m == "fp32" and pred(v))
    tf32_err = [float(run.notes[("v6 implicit GEMM TF32 WMMA", "tf32")][0]) for run in runs.values()]
    v7_err = [float(run.notes[("v7 implicit GEMM TF32 mma pipelined", "tf32")][0]) for run in runs.values()]
    print(f"err: v7 (TF32) {min(v7_err):.1e} to {max(v7_err):.1e}")
    v8_err = [float(run.notes[("v8 implicit GEMM TF32 mma ldmatrix", "tf32")][0]) for run in runs.values()]
    print(f"err: v8 (TF32) {min(v8_err):.1e} to {max(v8_err):.1e}")
    v9_err = [float(run.notes[("v9 implicit GEMM TF32 NHWC", "tf32")][0]) for run in runs.values()]
    print(f"err: v9 (TF32) {min(v9_err):.1e} to {max(v9_err):.1e}")
    print(f"err (max |got - want| / rms): v2-v5 up to {fp32_err(lambda v: v[:2] in ('v2', 'v3', 'v4', 'v5')):.1e}, "
          f"cuDNN's FMA rows up to {fp32_err(lambda v: v.startswith('cudnn')):.1e}; "
          f"v6 (TF32) {min(tf32_err):.1e} to {max(tf32_err):.1e}, "
          f"{min(tf32_err) / fp32_err(lambda v: v[:2] in ('v2', 'v3', 'v4', 'v5')):.0f} to "
          f"{max(tf32_err) / fp32_err(lambda v: v[:2] in ('v2', 'v3', 'v4', 'v5')):.0f} times v2-v5's largest; "
          f"cuDNN's tensor-op IMPLICIT_PRECOMP_GEMM rows "
          f"{min(float(e) for r in runs.values() for (v, m), (e, _) in r.notes.items() if m != 'fp32' and v == 'cudnn IMPLICIT_PRECOMP_GEMM'):.1e}"
          f" to {max(float(e) for r in runs.values() for (v, m), (e, _) in r.notes.items() if m != 'fp32' and v == 'cudnn IMPLICIT_PRECOMP_GEMM'):.1e}")
    ipg = lambda run: run.algo("IMPLICIT_PRECOMP_GEMM")["ms"]
    print(f"v4 / cuDNN's IMPLICIT_PRECOMP_GEMM in FMA math, batch 32 and 256: {rng('v4', ipg)}")
    for b in ("32", "256"):
        print(f"   batch {b}: " + ", ".join(f"{r.label()} s{r.stride} {ipg(r) / r.ours['v4']['ms']:.2f}"
                                          for r in runs.values() if r.batch == b))
    v4max = max(r.ours["v4"]["tflops"] for r in runs.values())
    print(f"v4 at most {v4max:.1f} TFLOP/s = {100 * v4max * 1e12 / FP32_PEAK:.0f} % of the FP32 peak")
    gemm_family = [(r.algo(a)["tflops"], a, f"{r.label()} s{r.stride} b{r.batch}") for r in runs.values()
                   for a in ("IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM") if r.batch != "1"]
    print(f"cuDNN's GEMM-family rows in FMA math, batch 32 and 256: up to {max(gemm_family)[0]:.1f} TFLOP/s "
          f"({max(gemm_family)[1]}, {max(gemm_family)[2]}) = {100 * max(gemm_family)[0] * 1e12 / FP32_PEAK:.0f} % of the peak")
    over = [(r.best_fp32()["tflops"], r.best_fp32()["version"][6:], f"{r.label()} s{r.stride} b{r.batch}")
            for r in runs.values() if r.best_fp32()["tflops"] > FP32_PEAK / 1e12]
    print("cuDNN's best FP32 above the FP32 peak (effective rates):", sorted(over, reverse=True))
    for r in runs.values():
        if r.batch != "1" and r.stride == "1":
            v5 = r.ours["v5"]
            vm = float(re.search(r"V\+M ([\d.]+) GiB", r.notes[("v5 Winograd F(2x2,3x3)", "fp32")][1]).group(1))
            wn = r.algo("WINOGRAD_NONFUSED")
            ws = float(re.search(r"workspace ([\d.]+) MiB", r.notes[(wn["version"], "fp32")][1]).group(1))
            print(f"v5 {r.label()} b{r.batch}: V+M {vm} GiB, written and read once = "
                  f"{2 * vm * 2**30 / HBM * 1e3:.3f} ms at 3.35 TB/s, of {v5['ms']:.4f} ms; "
                  f"cuDNN's WINOGRAD_NONFUSED workspace {ws} MiB ({ws / (vm * 1024):.2f} of v5's V+M)")
    for algo in ("FFT", "FFT_TILING"):
        xs = [r.algo(algo)["ms"] / r.best_fp32()["ms"] for r in runs.values() if r.h == "7" and r.batch != "1"]
        print(f"7x7x512, batch 32 and 256: {algo} takes {min(xs):.1f} to {max(xs):.1f} times cuDNN's best FP32 "
              f"(WINOGRAD_NONFUSED)")
    # cuDNN's GEMM: its workspace against the im2col matrix (C*9 x N*P*Q floats)
    same, other = [], []
    for r in runs.values():
        g = r.algo("GEMM")
        ws = float(re.search(r"workspace ([\d.]+) MiB", r.notes[(g["version"], "fp32")][1]).group(1))
        h, c, st, n = int(r.h), int(r.c), int(r.stride), int(r.batch)
        p = (h - 1) // st + 1
        mat = c * 9 * n * p * p * 4 / 2**20
        (same if abs(ws - mat) < 0.1 else other).append(f"{r.label()} s{r.stride} b{r.batch}: {ws} MiB "
                                                        f"(matrix {mat:.1f} MiB), {g['ms']:.4f} ms")
    print("cuDNN GEMM's workspace = the im2col matrix:", same)
    print("cuDNN GEMM's workspace otherwise:", other)
    # FFT's products per output and channel, if each plane is padded to the next power of two
    for h in (56, 28, 14, 7):
        n = 1
        while n < h + 2:
            n *= 2
        print(f"FFT at {h}x{h} padded to {n}x{n}: {n * (n // 2 + 1)} complex multiply-adds per plane pair = "
              f"{4 * n * (n // 2 + 1) / (h * h):.2f} real multiply-adds per output and channel (direct 9, F(2x2) "
              f"{16 * ((h + 1) // 2) ** 2 / (h * h):.2f})")


# ---- section 11: bench/results/lab08_mobilenet_h100_80gb_hbm3.csv ---------------------------------
MOBILENET = os.path.join(ROOT, "bench", "results", "lab08_mobilenet_h100_80gb_hbm3.csv")
MOBILENET_ROWS = [("solution", "the lab's solution: 9 kernels, each block fused"),
                  ("unfused", "part A's kernels layer by layer (depthwise v3, tiled SGEMM)"),
                  ("v1_fused_scalar", "the first fused block (one CTA per 8 x 8 tile, scalar sums)"),
                  ("cudnn", "cuDNN + cuBLAS (each 1 x 1 on the faster of the two)"),
                  ("cudnn_conv1x1", "cuDNN + cuBLAS, every 1 x 1 as a cuDNN convolution"),
                  ("pytorch_eager", "PyTorch eager"),
                  ("pytorch_graph", "PyTorch, one CUDA graph")]


def mobilenet_tables():
    section("bench/results/lab08_mobilenet_h100_80gb_hbm3.csv (section 11)")
    rows = list(csv.DictReader(open(MOBILENET, encoding="utf-8")))
    net = {(r["version"], r["batch"]): float(r["median_ms"]) for r in rows if r["workload"] == "mobilenet_fmnist"}
    flops = 2 * 9884880  # per image (section 8)
    cudnn = net[("cudnn", "10000")]
    print("| version | 10,000 images, ms | TFLOP/s | x cuDNN + cuBLAS | 1 image, ms | 1 image as a CUDA graph, ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for version, label in MOBILENET_ROWS:
        big = net.get((version, "10000"))
        one = net.get((version, "1"))
        graph = net.get((version + "_graph", "1")) if not version.endswith("_graph") else net.get((version, "1"))
        if version == "pytorch_graph":
            one = None
        cells = [f"{big:.2f}" if big else "", f"{flops * 10000 / big / 1e9:.1f}" if big else "",
                 f"{cudnn / big:.2f}" if big else "", f"{one:.3f}" if one else "", f"{graph:.3f}" if graph else ""]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(f"solution at {100 * flops * 10000 / (net[('solution', '10000')] * 1e-3) / FP32_PEAK:.0f} % of the FP32 peak; "
          f"{net[('unfused', '10000')] / net[('solution', '10000')]:.2f}x the unfused rung, "
          f"{net[('pytorch_eager', '10000')] / net[('solution', '10000')]:.2f}x PyTorch eager")
    print("\n| block (ours, batch 10,000) | fused solution, ms | first fused block, ms | cuDNN + cuBLAS, ms | solution x cuDNN |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        if r["workload"].startswith("block") and r["version"] == "solution":
            w = r["workload"]
            get = {x["version"]: float(x["median_ms"]) for x in rows if x["workload"] == w and x["batch"] == r["batch"]}
            print(f"| {w} | {get['solution']:.3f} | {get['v1_fused_scalar']:.3f} | {get['cudnn']:.3f} | "
                  f"{get['cudnn'] / get['solution']:.2f} |")
    print("\n| MobileNetV2@224 block | batch | fused solution, ms | cuDNN + cuBLAS, ms | solution x cuDNN |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        if r["workload"].startswith("v2@224") and r["version"] == "solution":
            w, b = r["workload"], r["batch"]
            get = {x["version"]: float(x["median_ms"]) for x in rows if x["workload"] == w and x["batch"] == b}
            print(f"| {w[7:]} | {b} | {get['solution']:.4f} | {get['cudnn']:.4f} | {get['cudnn'] / get['solution']:.2f} |")


if __name__ == "__main__":
    im2col_example()
    resnet_im2col()
    tiles()
    intensities()
    course_mobilenet()
    depthwise_table()
    conv3x3_tables()
    mobilenet_tables()
