#!/usr/bin/env python3
"""A student's optimization log: every `./course grade` of a GPU lab appended its speed result to
<build>/progress/history.jsonl; this draws them, run after run, as an SVG and a terminal chart,
next to the rungs of the lecture's optimization ladder (lab 07).

    progress.py --history FILE --lab LAB --svg OUT.svg [--ladder CSV]
    progress.py --history FILE --list-labs

LAB: lab07, 7 or lab07_optimized_cuda. The speed-up is against the lab's reference solution,
measured in the same run on the same GPU; lab 07's reference is rung 09 of the ladder, so rung r
stands at t(rung 09) / t(rung r). Python 3 standard library only.
"""
import argparse
import csv
import datetime
import glob
import json
import math
import os
import re
import sys
import textwrap
from xml.sax.saxutils import escape as xml_escape

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LADDER_DIR = os.path.join(ROOT, "bench", "results")
DEFAULT_LADDER = "lab07_h100_80gb_hbm3.csv"
LADDER_LAB = 7
REFERENCE_RUNG = 9        # register_blocked: lab 07's reference solution
SHOWN_RUNGS = (4, 8, 9, 12)
TERMINAL_WIDTH = 80
TERMINAL_ROWS = 30         # the terminal shows the latest runs; the SVG has them all
# A history line is read like a results record: one reader of numbers for both.
sys.path.insert(0, os.path.join(ROOT, "grader", "report"))
from instructor_report import num  # noqa: E402

WHAT_TO_RUN = "run `./course grade lab07` on a machine with an NVIDIA GPU: each graded run of a GPU lab adds a point"

_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")


def clean(value, limit=60):
    """Text from the history file made printable and short (it is the student's own file, but
    a terminal escape in it must not reach the terminal, nor markup the SVG)."""
    text = _INVISIBLE.sub("?", value if isinstance(value, str) else "")
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def svg_text(value, limit=80):
    return xml_escape(clean(value, limit), {'"': "&quot;", "'": "&#39;"})



def lab_number(name):
    """7 for "lab07", "7", "07" or "lab07_optimized_cuda"; None for anything else."""
    m = re.fullmatch(r"(?:lab)?0*(\d{1,3})(?:_\w*)?", name.strip()) if isinstance(name, str) else None
    return int(m.group(1)) if m else None


def warn(message):
    print(f"progress: warning: {message}", file=sys.stderr)


# --- reading --------------------------------------------------------------------------------


def read_history(path):
    """The history's runs (dicts, in file order), or None when the file does not exist."""
    if not os.path.exists(path):
        return None
    runs = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                run = json.loads(line)
            except json.JSONDecodeError as e:
                warn(f"{path}:{n}: not valid JSON ({e.msg}); line skipped")
                continue
            if not isinstance(run, dict) or not isinstance(run.get("lab"), str) or not (num(run.get("speedup")) or 0) > 0:
                warn(f"{path}:{n}: no lab or no positive \"speedup\"; line skipped")
                continue
            runs.append(run)
    return runs


def read_ladder(path):
    """(device, {rung: (name, median_ms)}) of the ladder rows on 10,000 images, device timing."""
    rungs, device = {}, ""
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row.get("source") != "ladder" or row.get("mode") != "device" or row.get("batch") != "10000":
                continue
            try:
                ms = float(row["median_ms"])
                rung = int(row["version"])
            except (TypeError, ValueError):
                continue
            rungs[rung] = (row.get("name") or f"rung {rung}", ms)
            device = row.get("device") or device
    if REFERENCE_RUNG not in rungs:
        sys.exit(f"progress: {path} has no rung {REFERENCE_RUNG:02d} (ladder,{REFERENCE_RUNG},...,device,10000,...): "
                 "it is lab 07's reference, every rung is placed against it; give the lecture's CSV "
                 f"(bench/results/{DEFAULT_LADDER})")
    return device, rungs


def squash(name):
    return re.sub(r"[^a-z0-9]", "", name.lower())


def pick_ladder(ladder_dir, gpu):
    """The ladder CSV measured on the student's GPU model if bench/results has one, else the H100's."""
    paths = sorted(glob.glob(os.path.join(ladder_dir, f"lab{LADDER_LAB:02d}_*.csv")))
    for path in paths:
        try:
            device, _ = read_ladder(path)
        except (OSError, SystemExit):
            continue
        if gpu and device and squash(device) in squash(gpu):
            return path
    default = os.path.join(ladder_dir, DEFAULT_LADDER)
    return default if os.path.exists(default) else (paths[0] if paths else None)


# --- the numbers ----------------------------------------------------------------------------


class Chart:
    """Everything both drawings show, worked out once."""

    def __init__(self, runs, lab, ladder_path):
        self.runs = runs
        self.lab = lab
        self.gpu = next((clean(r.get("gpu"), 80) for r in reversed(runs) if clean(r.get("gpu"))), "")
        self.rungs = []  # (rung, name, speed-up vs the reference)
        self.ladder_device = ""
        self.ladder_path = ladder_path
        if ladder_path:
            self.ladder_device, table = read_ladder(ladder_path)
            t_ref = table[REFERENCE_RUNG][1]
            self.rungs = [(r, table[r][0], t_ref / table[r][1]) for r in SHOWN_RUNGS if r in table and table[r][1] > 0]
        self.gate, self.gate_label = self.find_gate()

    def find_gate(self):
        """The pass threshold as a speed-up vs the reference: the lab's own gate when it has one;
        lab 07 passes against the naive pipeline, which each run measured too, so there the
        threshold is naive_gate x speedup / speedup_vs_naive (the median over the runs)."""
        self.naive_need = None
        gates = [num(r.get("required")) for r in self.runs if (num(r.get("required")) or 0) > 0]
        if gates:
            g = median(gates)
            return g, f"gate {g:.2f}x"
        converted = []
        for r in self.runs:
            vs_naive, point = num(r.get("speedup_vs_naive")), num(r.get("speedup"))
            need = num(r.get("speedup_vs_naive_required"))  # the grader writes the gate with the run
            if vs_naive and point and need:
                converted.append((need, need * point / vs_naive))
        if converted:
            self.naive_need, g = converted[-1][0], median([c[1] for c in converted])
            return g, f"pass: {self.naive_need:g}x naive = {g:.2f}x"
        return 0.0, ""

    def same_gpu(self):
        """Whether the rungs were measured on the GPU model of the student's runs."""
        return bool(self.gpu and self.ladder_device and squash(self.ladder_device) in squash(self.gpu))

    def best_passing(self):
        passing = [(i, r) for i, r in enumerate(self.runs, 1) if r.get("status") == "passed"]
        return max(passing, key=lambda ir: num(ir[1]["speedup"])) if passing else None

    def fastest(self):
        return max(enumerate(self.runs, 1), key=lambda ir: num(ir[1]["speedup"]))

    def between(self, value):
        """Which shown rungs `value` lies between, in words."""
        if not self.rungs:
            return ""
        ordered = sorted(self.rungs, key=lambda r: r[2])

        def rung(r):
            return f"rung {r[0]:02d} {r[1]} ({r[2]:.2f}x)"
        if value < ordered[0][2]:
            return f"below {rung(ordered[0])}"
        if value >= ordered[-1][2]:
            return f"at or above {rung(ordered[-1])}, the fastest rung shown"
        for lo, hi in zip(ordered, ordered[1:]):
            if lo[2] <= value < hi[2]:
                return f"between {rung(lo)} and {rung(hi)}"
        return ""

    def where_you_stand(self):
        reference = "the lab 07 reference" if lab_number(self.lab) == LADDER_LAB else "the reference"
        lines = []
        best = self.best_passing()
        if best:
            i, r = best
            where = self.between(num(r["speedup"]))
            lines.append(f"Where you stand: your best passing run (#{i}, {when(r)}, files {short_hash(r)}) is "
                         f"{num(r['speedup']):.2f}x {reference}" + (f", {where}." if where else "."))
        else:
            i, r = self.fastest()
            where = self.between(num(r["speedup"]))
            lines.append(f"Where you stand: none of your {len(self.runs)} runs has passed yet; your fastest "
                         f"(#{i}, {when(r)}) is {num(r['speedup']):.2f}x {reference}" + (f", {where}." if where else "."))
        if self.gate > 0:
            lines.append(f"The pass threshold is {self.gate:.2f}x {reference}"
                         + (f" ({self.naive_need:g}x the naive pipeline, as your runs measured it)." if self.naive_need else "."))
        if self.rungs:
            if self.same_gpu():
                lines.append(f"The rungs were measured on your GPU model ({self.ladder_device}).")
            else:
                lines.append(f"The rungs were measured on {self.ladder_device or 'an unnamed GPU'}, your runs on {self.gpu or 'an unknown GPU'}: "
                             "speed-ups are ratios on each GPU, so compare them only roughly.")
        return lines

    def value_range(self):
        values = [num(r["speedup"]) for r in self.runs]
        values += [v for r in self.runs for v in (num(r.get("ci_low")), num(r.get("ci_high"))) if v and v > 0]
        values += [r[2] for r in self.rungs] + ([self.gate] if self.gate > 0 else [])
        lo, hi = math.log10(min(values)), math.log10(max(values))
        if hi - lo < 0.3:
            mid = (hi + lo) / 2
            lo, hi = mid - 0.15, mid + 0.15
        pad = (hi - lo) * 0.06
        return lo - pad, hi + pad


def median(values):
    s = sorted(values)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def when(run):
    t = run.get("time")
    try:
        return datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ").strftime("%m-%d %H:%M")
    except (TypeError, ValueError):
        return clean(t, 11) or "?"


def short_hash(run):
    return clean(run.get("files_hash"), 64)[:8] or "-"  # like a short git hash


def ticks(lo_l, hi_l):
    """1-2-5 ticks on a log axis, finer when the range is narrow."""
    found = []
    for mantissas in ((1, 2, 5), (1, 1.5, 2, 3, 5, 7)):
        found = [m * 10.0 ** k for k in range(math.floor(lo_l) - 1, math.ceil(hi_l) + 1)
                 for m in mantissas if lo_l <= math.log10(m * 10.0 ** k) <= hi_l]
        if len(found) >= 3:
            break
    return found


# --- terminal -------------------------------------------------------------------------------


def terminal_chart(chart):
    """Plain text, at most TERMINAL_WIDTH columns, no colour: a row per run on a log axis."""
    prefix_w, suffix_w = 25, 14  # '  1 11-25 03:10 1a2b3c4d ' and ' 0.52x passed'
    width = TERMINAL_WIDTH - prefix_w - suffix_w
    lo_l, hi_l = chart.value_range()

    def col(v):
        return min(width - 1, max(0, round((math.log10(v) - lo_l) / (hi_l - lo_l) * (width - 1))))

    lines = [clean(f"{chart.lab}: speed-up vs the reference, run by run (log scale)", TERMINAL_WIDTH),
             "o passed  x failed  [--] 95% CI" + ("  : rung" if chart.rungs else "")
             + ("  | pass threshold" if chart.gate > 0 else "")]
    background = [" "] * width
    for r in chart.rungs:
        background[col(r[2])] = ":"
    if chart.gate > 0:
        background[col(chart.gate)] = "|"
    # Rung numbers over their columns (a second row where two would touch).
    label_rows = [[" "] * width, [" "] * width]
    for r in chart.rungs:
        c, label = col(r[2]), f"{r[0]:02d}"
        start = min(max(0, c), width - len(label))
        for row in label_rows:
            if all(ch == " " for ch in row[max(0, start - 1):start + len(label) + 1]):
                row[start:start + len(label)] = label
                break
    if chart.rungs:
        lines.append(" " * prefix_w + "".join(label_rows[0]).rstrip() + "   rungs")
        if any(ch != " " for ch in label_rows[1]):
            lines.append(" " * prefix_w + "".join(label_rows[1]).rstrip())
    lines.append(f"{'#':>3} {'time (UTC)':11} {'files':8} " + "".join(background).rstrip())
    runs = list(enumerate(chart.runs, 1))
    if len(runs) > TERMINAL_ROWS:
        lines.append(f"    ... {len(runs) - TERMINAL_ROWS} earlier runs (the SVG has them all)")
        runs = runs[-TERMINAL_ROWS:]
    for i, r in runs:
        row = list(background)
        low, high = num(r.get("ci_low")), num(r.get("ci_high"))
        if low and high and low > 0 and col(high) - col(low) >= 2:
            for c in range(col(low), col(high) + 1):
                row[c] = "-"
            row[col(low)], row[col(high)] = "[", "]"
        row[col(num(r["speedup"]))] = "o" if r.get("status") == "passed" else "x"
        verdict = "passed" if r.get("status") == "passed" else clean(r.get("status"), 6) or "?"
        lines.append(f"{i:>3} {when(r):11} {short_hash(r):8} " + "".join(row) + f" {num(r['speedup']):5.2f}x {verdict}")
    # The axis: tick values under their columns, none overlapping.
    axis = [" "] * (width + suffix_w)
    for t in ticks(lo_l, hi_l):
        label = f"{t:g}x"
        start = min(max(0, col(t) - len(label) // 2), width + suffix_w - len(label))
        if all(ch == " " for ch in axis[max(0, start - 1):start + len(label) + 1]):
            axis[start:start + len(label)] = label
    lines.append(" " * prefix_w + "".join(axis).rstrip())
    if chart.rungs:
        lines += textwrap.wrap("rungs: " + ", ".join(f"{r[0]:02d} {r[1]} {r[2]:.2f}x" for r in chart.rungs),
                               TERMINAL_WIDTH, subsequent_indent="       ", break_on_hyphens=False)
    return [line[:TERMINAL_WIDTH] for line in lines]


# --- SVG ------------------------------------------------------------------------------------


def svg_chart(chart):
    n = len(chart.runs)
    step = max(18.0, min(90.0, 760.0 / max(n, 1)))  # wide enough for a few runs, still fits 40
    left, right, top, bottom = 110, 280, 64, 175  # bottom: the run labels, turned 60 degrees
    pw, ph = step * max(n, 1), 340
    W, H = left + pw + right, top + ph + bottom
    lo_l, hi_l = chart.value_range()

    def y(v):
        return top + ph - (math.log10(v) - lo_l) / (hi_l - lo_l) * ph

    def x(i):
        return left + step * (i - 0.5)

    title = f"{chart.lab}: your speed-up vs the reference, run by run"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W:.0f}" height="{H:.0f}" viewBox="0 0 {W:.0f} {H:.0f}" '
           'font-family="sans-serif" font-size="12">',
           f"<title>{svg_text(title)}</title>",
           '<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>',
           f'<text x="{left}" y="24" font-size="16" font-weight="bold">{svg_text(title)}</text>']
    if chart.rungs:
        same = chart.same_gpu()
        sub = (f"rungs: the lecture's ladder measured on {chart.ladder_device}"
               + (" (your GPU model)" if same else f"; your runs: {chart.gpu or 'unknown GPU'} (ratios: compare only roughly)"))
        out.append(f'<text x="{left}" y="44" fill="#56606a">{svg_text(sub, 200)}</text>')
    for t in ticks(lo_l, hi_l):
        out.append(f'<line x1="{left}" x2="{left + pw:.1f}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e4e8ec"/>')
        out.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}\u00d7</text>')
    out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}" stroke="#56606a"/>')
    out.append(f'<line x1="{left}" x2="{left + pw:.1f}" y1="{top + ph}" y2="{top + ph}" stroke="#56606a"/>')
    out.append(f'<text x="{left - 48}" y="{top + ph / 2}" text-anchor="middle" transform="rotate(-90 {left - 48} {top + ph / 2})">'
               "speed-up vs the reference (log scale)</text>")
    # Rungs and the threshold: horizontal lines, labelled at the right; labels pushed apart.
    marks = [(r[2], f"rung {r[0]:02d} {r[1]} {r[2]:.2f}\u00d7" + (" (the reference)" if r[0] == REFERENCE_RUNG else ""),
              "#7a8793", "5 4") for r in chart.rungs]
    if chart.gate > 0:
        marks.append((chart.gate, chart.gate_label.replace("x", "\u00d7"), "#c0392b", "8 4"))
    last_y = None
    for v, label, colour, dash in sorted(marks, key=lambda m: -m[0]):
        out.append(f'<line x1="{left}" x2="{left + pw + 6:.1f}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="{colour}" '
                   f'stroke-width="1.5" stroke-dasharray="{dash}"/>')
        ly = y(v) + 4 if last_y is None else max(y(v) + 4, last_y + 14)
        last_y = ly
        out.append(f'<text x="{left + pw + 10:.1f}" y="{ly:.1f}" fill="{colour}">{svg_text(label, 60)}</text>')
    # The runs: a line through them, the CI as an error bar, a dot (filled: passed).
    points = " ".join(f"{x(i):.1f},{y(num(r['speedup'])):.1f}" for i, r in enumerate(chart.runs, 1))
    out.append(f'<polyline points="{points}" fill="none" stroke="#9db4d0" stroke-width="1.5"/>')
    for i, r in enumerate(chart.runs, 1):
        v, low, high = num(r["speedup"]), num(r.get("ci_low")), num(r.get("ci_high"))
        passed = r.get("status") == "passed"
        colour = "#2e7d32" if passed else "#c0392b"
        if low and high and 0 < low <= high:
            out.append(f'<path d="M{x(i) - 4:.1f},{y(high):.1f}h8M{x(i):.1f},{y(high):.1f}V{y(low):.1f}M{x(i) - 4:.1f},{y(low):.1f}h8" '
                       f'stroke="{colour}" fill="none"/>')
        tip = (f"run {i}: {when(r)} UTC, files {clean(r.get('files_hash'), 16) or '-'}, {v:.3f}x "
               f"({clean(r.get('status'), 12)})" + (f", CI {low:.3f}-{high:.3f}" if low and high else ""))
        out.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="5" fill="{colour if passed else "#ffffff"}" '
                   f'stroke="{colour}" stroke-width="2"><title>{svg_text(tip, 200)}</title></circle>')
        lx, ly = x(i) + 4, top + ph + 12
        out.append(f'<text x="{lx:.1f}" y="{ly}" font-size="11" text-anchor="end" transform="rotate(-60 {lx:.1f} {ly})">'
                   f"#{i} {svg_text(when(r), 12)} {svg_text(short_hash(r), 8)}</text>")
    legend_y = H - 12
    out.append(f'<text x="{left}" y="{legend_y}" fill="#56606a">each point: run number, time (UTC), files hash; '
               "filled = passed, hollow = failed; bar = 95% CI</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


# --- main -----------------------------------------------------------------------------------


def main(argv=None):
    p = argparse.ArgumentParser(description="Draw a student's optimization log from history.jsonl.")
    p.add_argument("--history", required=True, help="<build>/progress/history.jsonl")
    p.add_argument("--lab", help="lab07, 7 or lab07_optimized_cuda")
    p.add_argument("--svg", help="the SVG file to write")
    p.add_argument("--ladder", help="the ladder CSV (default: the one in bench/results measured on your GPU, else the H100's)")
    p.add_argument("--ladder-dir", default=LADDER_DIR, help=argparse.SUPPRESS)  # tests
    p.add_argument("--list-labs", action="store_true", help="print the labs the history has runs of, and stop")
    args = p.parse_args(argv)

    runs = read_history(args.history)
    if runs is None or not runs:
        state = "does not exist" if runs is None else "has no speed results"
        print(f"progress: {args.history} {state} yet: {WHAT_TO_RUN}.", file=sys.stderr)
        return 1
    if args.list_labs:
        for lab in sorted({r["lab"] for r in runs if lab_number(r["lab"]) is not None}):
            print(clean(lab))
        return 0
    if not args.lab or not args.svg:
        p.error("--lab and --svg are needed (or --list-labs)")
    number = lab_number(args.lab)
    if number is None:
        p.error(f"--lab {args.lab!r}: give a lab as lab07, 7 or lab07_optimized_cuda")
    runs = [r for r in runs if lab_number(r["lab"]) == number]
    if not runs:
        print(f"progress: {args.history} has no speed results for lab {number:02d} yet: "
              f"{WHAT_TO_RUN.replace('lab07', f'lab{number:02d}')}.", file=sys.stderr)
        return 1
    lab = clean(runs[-1]["lab"])
    ladder = None
    if number == LADDER_LAB:
        gpu = next((r.get("gpu") for r in reversed(runs) if isinstance(r.get("gpu"), str) and r.get("gpu")), "")
        ladder = args.ladder or pick_ladder(args.ladder_dir, gpu)
        if not ladder or not os.path.exists(ladder):
            warn(f"no ladder CSV ({args.ladder or os.path.join(args.ladder_dir, DEFAULT_LADDER)}): the chart has no rungs")
            ladder = None
    chart = Chart(runs, lab, ladder)
    svg = svg_chart(chart)
    tmp = args.svg + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(svg)
    os.replace(tmp, args.svg)
    print("\n".join(terminal_chart(chart)))
    print()
    for line in chart.where_you_stand():
        print(textwrap.fill(line, TERMINAL_WIDTH, break_on_hyphens=False, break_long_words=False))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `./course progress | head`: the reader left, nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
