#!/usr/bin/env python3
"""Lab 07's host timeline: what the copy engines, the SMs and the host do during one call of
classify_from_host (10,000 pinned uint8 images to host labels), drawn from rung 20's own CUDA
events, because Nsight Systems is not available everywhere (it is not on our benchmark machine).

    COURSE_LADDER_TIMELINE=t.csv COURSE_LADDER_CHUNKS=6 COURSE_LADDER_COMPUTE_STREAMS=1 \\
        COURSE_LADDER_LABELS=copy build/bench/lab07_ladder --no-check --version 20 --batch 10000 --mode host
    COURSE_LADDER_TIMELINE=t.csv build/bench/lab07_ladder --no-check --version 20 --batch 10000 --mode host
    python3 bench/plot_host_timeline.py --csv t.csv [--out lectures/figures/07-host-timeline.svg]

(bench/lab07_host_timeline.sh runs all three.) The first command is rung 14's pipeline rebuilt
with rung 20's knobs (6 equal chunks, one compute stream, labels copied back), the second rung 20
as it is (8 chunks, two compute streams, labels written into host memory by the kernels).

The CSV (one row per copy or kernel of one call; times in microseconds after the call's first
event, recorded on the GPU; the "host" row is the caller's wall clock for the whole call; the
"reference" row is one copy of all the pixels alone, timed right after the call, drawn from 0):
  call,pipeline,images,lane,op,chunk,start_us,end_us,device
For each pipeline the call with the median host time is drawn (the first call, a warm-up, left out),
one panel per pipeline, one row per lane. The pipeline's name says its split: copies/6x1/s1 =
labels copied back, 6 chunks each x1 the one before, 1 compute stream. Recording events costs time, so these calls are a little slower than the benchmark's.

Only the Python 3 standard library (plot_lab07.py's SVG helpers).
"""
import argparse
import collections
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_lab07 import esc, svg_document, text, write  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def title(pipeline):
    """'copies/6x1/s1' -> words: the path, the chunks (count x growth) and the compute streams."""
    if pipeline == "zerocopy":
        return "one kernel reads the pinned pixels over PCIe itself (tried, slower)"
    path, split, streams = (pipeline.split("/") + ["", ""])[:3]
    chunks, _, growth = split.partition("x")
    words = f"{chunks} chunks" + ("" if growth in ("1", "") else f", each x{growth} the one before")
    words += f", {streams[1:]} compute stream{'s' if streams[1:] != '1' else ''}"
    who = {"copies/6x1/s1": "rung 14's pipeline", "mapped_labels/8x1/s2": "rung 20"}.get(pipeline, pipeline)
    if path == "copies":
        return f"{who}: {words}, labels copied back per chunk"
    return f"{who}: {words}, the kernels write the labels into host memory"
LANES = [("reference", "H2D copy alone"), ("upload", "upload stream"), ("compute", "compute stream"),
         ("compute 2", "compute stream 2"), ("compute 3", "compute stream 3"), ("compute 4", "compute stream 4"),
         ("download", "download stream"), ("host", "host: the call")]
COLOURS = {"h2d": "#4c72b0", "h2d_alone": "#9db4d8", "kernel": "#dd8452", "d2h": "#55a868", "call": "#8c8c8c"}


def read(path):
    calls = collections.defaultdict(list)  # (pipeline, call) -> rows
    device = ""
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            row["start_us"], row["end_us"] = float(row["start_us"]), float(row["end_us"])
            calls[(row["pipeline"], int(row["call"]))].append(row)
            device = row["device"]
    chosen = {}
    for pipeline in sorted({p for p, _ in calls}):
        runs = [(c, rows) for (p, c), rows in calls.items() if p == pipeline]
        runs = runs[1:] if len(runs) > 2 else runs  # the first call warms up
        runs.sort(key=lambda cr: next(r["end_us"] for r in cr[1] if r["lane"] == "host"))
        chosen[pipeline] = runs[len(runs) // 2][1]  # the median call by the host's time
    return chosen, device


def plot(chosen, device, path, labels):
    order = list(chosen)
    span = max(r["end_us"] for rows in chosen.values() for r in rows)
    left, right, lane_h, gap = 150, 30, 24, 56
    width = 900
    scale = (width - left - right) / (span * 1.04)
    panels = [(p, [lane for lane in LANES if any(r["lane"] == lane[0] for r in chosen[p])]) for p in order]
    height = 50 + sum(gap + len(lanes) * lane_h for _, lanes in panels) + 40
    body = [text(width / 2, 24, f"10,000 images, pinned uint8 pixels to host labels ({device})", "middle",
                 size=15, weight="bold")]
    y = 50
    for pipeline, lanes in panels:
        rows = chosen[pipeline]
        host = next(r["end_us"] for r in rows if r["lane"] == "host")
        label = labels.get(pipeline, title(pipeline))
        body.append(text(left, y + 22, f"{label} -- {host / 1000:.3f} ms (events recorded)", weight="bold"))
        y += gap - 20
        for lane, label in lanes:
            body.append(text(left - 8, y + lane_h * 0.65, label, "end", size=12))
            body.append(f'<line x1="{left}" y1="{y + lane_h:.1f}" x2="{width - right}" y2="{y + lane_h:.1f}" '
                        f'stroke="#e5e5e5"/>')
            for r in rows:
                if r["lane"] != lane:
                    continue
                x0, x1 = left + r["start_us"] * scale, left + r["end_us"] * scale
                colour = COLOURS.get(r["op"], "#999")
                body.append(f'<rect x="{x0:.1f}" y="{y + 3:.1f}" width="{max(x1 - x0, 1.0):.1f}" '
                            f'height="{lane_h - 6}" fill="{colour}" stroke="#fff" stroke-width="0.6">'
                            f'<title>{esc(r["op"])} chunk {r["chunk"]}: {r["start_us"]:.1f} to '
                            f'{r["end_us"]:.1f} µs</title></rect>')
                if lane == "reference":
                    body.append(text(x1 + 4, y + lane_h * 0.65, f"{r['end_us']:.0f} µs", size=11, fill="#555"))
            y += lane_h
    # A time axis under the last panel.
    step = 25 if span < 300 else 50
    y += 6
    for t in range(0, int(span * 1.04) + 1, step):
        x = left + t * scale
        body.append(f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x:.1f}" y2="{y + 5:.1f}" stroke="#333"/>')
        body.append(text(x, y + 18, f"{t}", "middle", size=11))
    body.append(text(width - right, y + 34, "µs after the call's first event (CUDA events on the GPU; host row: "
                     "wall clock)", "end", size=11, fill="#555"))
    write(path, svg_document(width, height, "Host pipeline timeline", body))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv", required=True, help="rows appended by COURSE_LADDER_TIMELINE")
    parser.add_argument("--out", default=os.path.join(ROOT, "lectures", "figures", "07-host-timeline.svg"))
    parser.add_argument("--pipeline", action="append", default=[], metavar="NAME[=LABEL]",
                        help="draw only these pipelines (the CSV's names, e.g. copies/6x1/s1), in this order, "
                             "with an optional panel title; default: every pipeline in the CSV")
    args = parser.parse_args(argv)
    chosen, device = read(args.csv)
    labels = dict(item.split("=", 1) for item in args.pipeline if "=" in item)
    wanted = [item.split("=", 1)[0] for item in args.pipeline]
    if wanted:
        missing = [p for p in wanted if p not in chosen]
        if missing:
            raise SystemExit(f"plot_host_timeline: not in {args.csv}: {', '.join(missing)} (have: {', '.join(chosen)})")
        chosen = {p: chosen[p] for p in wanted}
    else:
        chosen = {p: chosen[p] for p in sorted(chosen, key=lambda p: (not p.startswith("copies"), p))}
    if not chosen:
        raise SystemExit(f"plot_host_timeline: no rows in {args.csv}")
    plot(chosen, device, args.out, labels)
    for pipeline, rows in chosen.items():
        host = next(r["end_us"] for r in rows if r["lane"] == "host")
        alone = [r["end_us"] for r in rows if r["op"] == "h2d_alone"]
        gpu_end = max(r["end_us"] for r in rows if r["lane"] not in ("host", "reference"))
        print(f"{pipeline:22s} host {host:7.1f} us, last GPU event {gpu_end:7.1f} us, "
              f"H2D alone {alone[0] if alone else float('nan'):6.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
