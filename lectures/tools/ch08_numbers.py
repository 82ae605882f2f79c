#!/usr/bin/env python3
"""Recomputes every derived number of chapter 8 (lectures/08-conv-algorithms.md) except the
Winograd example, which lectures/tools/winograd_example.py checks.

Plain Python. Sections: im2col (the tiny example and ResNet-50's 3x3 layers at batch 32), GEMM
tiles, FFT spectra, depthwise/pointwise intensities and the fused inverted residual, the course's
MobileNetV2 (block table, multiply-adds, parameters), and the depthwise table drawn from
bench/results/lab08_depthwise_h100_80gb_hbm3.txt.

Usage: python3 lectures/tools/ch08_numbers.py   (from the repository root)
"""
import os
import re
from collections import OrderedDict

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FP32_PEAK, HBM = 66.9e12, 3.35e12  # H100 SXM, chapter 7 section 1


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
    wins = rows = 0
    for (h, c, s), by_batch in groups.items():
        cells = []
        for b in ("32", "256"):
            rows_ = by_batch[b]
            best = min((r for r in rows_ if r[0].startswith("cudnn")), key=lambda r: r[1])
            v3 = next(r for r in rows_ if r[0] == "v3")
            rows += 1
            wins += float(v3[3]) > 1.0
            cells.append(f"`{best[0][6:]}` {best[1]:.4f} ({best[2]:,}) | {v3[1]:.4f} ({v3[2]:,}) | {v3[3]}")
        print(f"| {h}x{h}x{c} | {s} | " + " | ".join(cells) + " |")
    print(f"v3 faster than cuDNN's best in {wins} of {rows} rows")
    for algo in ("WINOGRAD_NONFUSED", "FFT", "FFT_TILING"):
        ratios = []
        for (h, c, s), by_batch in groups.items():
            for b, rows_ in by_batch.items():
                best = min(r[1] for r in rows_ if r[0].startswith("cudnn"))
                ratios += [(r[1] / best, f"{h}x{h}x{c} s{s} batch {b}") for r in rows_ if r[0] == "cudnn " + algo]
        print(f"{algo}: {min(ratios)[0]:.1f} to {max(ratios)[0]:.0f} times cuDNN's best (worst: {max(ratios)[1]})")


if __name__ == "__main__":
    im2col_example()
    resnet_im2col()
    tiles()
    intensities()
    course_mobilenet()
    depthwise_table()
