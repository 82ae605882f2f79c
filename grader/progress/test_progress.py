#!/usr/bin/env python3
"""grader.progress_chart: progress.py and `./course progress` on synthetic histories (with a bad
line and hostile text): the terminal chart (80 columns, no colour, the where-you-stand sentence
for a known speed-up), the SVG checked statically and then in headless Chromium (its DOM and a
screenshot that is not blank). Without Chromium the second half exits 77 (CTest: skipped).

    test_progress.py [WORK_DIR]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "grader", "report"))
import headless  # noqa: E402
from headless import check  # noqa: E402

PROGRESS = os.path.join(HERE, "progress.py")
H100_CSV = os.path.join(ROOT, "bench", "results", "lab07_h100_80gb_hbm3.csv")
H100 = "NVIDIA H100 80GB HBM3"
SVG_NS = "{http://www.w3.org/2000/svg}"
HOSTILE_HASH = '"><script>alert(1)</script>'


def rung_labels(csv_path=H100_CSV, shown=(4, 8, 9, 12)):
    """The chart's rung labels, worked out here from the CSV's own rows (ladder, device, 10,000
    images): rung r stands at t(rung 09) / t(rung r). Read with the csv module, not progress.py's
    reader, so that a mistake there cannot agree with itself; and from the committed file, so that
    a new benchmark run does not break the test (2026-11-26: 0.09, 0.42, 1.00, 3.13)."""
    import csv
    times = {}
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            if row["source"] == "ladder" and row["mode"] == "device" and row["batch"] == "10000":
                times[int(row["version"])] = (row["name"], float(row["median_ms"]))
    return [f"rung {r:02d} {times[r][0]} {times[9][1] / times[r][1]:.2f}\u00d7" for r in shown]


# Rungs vs the reference (rung 09) as the chart must label them.
RUNG_LABELS = rung_labels()
# Runs: (time, status, speed-up, files hash); None = a line that is not JSON.
RUNS = [("2026-11-20T14:02:11Z", "failed", 0.062, "aa11bb22cc33dd44"),
        ("2026-11-20T15:40:00Z", "failed", 0.094, "0badc0de0badc0de"),
        None,
        ("2026-11-21T10:05:00Z", "passed", 0.31, "1a2b3c4d5e6f7a8b"),
        ("2026-11-22T09:30:00Z", "passed", 0.52, "fedcba9876543210"),
        ("2026-11-22T11:00:00Z", "passed", 0.48, HOSTILE_HASH)]
WHERE = ("Where you stand: your best passing run (#4, 11-22 09:30, files fedcba98) is 0.52x the lab 07 "
         f"reference, between rung 08 one_kernel ({RUNG_LABELS[1].split()[-1][:-1]}x) and rung 09 register_blocked (1.00x).")


def write_history(path, runs=RUNS, gpu=H100, lab="lab07_optimized_cuda", required=0.0):
    with open(path, "w") as f:
        for r in runs:
            if r is None:
                f.write('{"time": "2026-11-21T09:00:00Z", "lab": "lab07_opt\n')
                continue
            t, status, v, h = r
            line = {"time": t, "lab": lab, "status": status, "speedup": v, "ci_low": v * 0.9, "ci_high": v * 1.1,
                    "required": required, "pipeline_ms": 0.2716 / v, "reference_ms": 0.2716, "gpu": gpu,
                    "files_hash": h, "seed": 7}
            if lab.startswith("lab07"):
                line["speedup_vs_naive"] = v * 15.95  # the naive pipeline is ~15.95x slower than the reference
                line["speedup_vs_naive_required"] = 3.0
            f.write(json.dumps(line) + "\n")
    return path


def progress(*args):
    r = subprocess.run([sys.executable, PROGRESS] + list(args), capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def flat(text):
    return re.sub(r"\s+", " ", text)


def svg_texts(path):
    """The SVG must be well-formed XML (it is a file of its own); all its text, joined."""
    root = ET.parse(path).getroot()
    return root, " ".join("".join(e.itertext()) for e in root.iter(SVG_NS + "text"))


def static_checks(work):
    hist = write_history(os.path.join(work, "history.jsonl"))
    svg = os.path.join(work, "lab07.svg")
    rc, out, err = progress("--history", hist, "--lab", "7", "--svg", svg)
    check(rc == 0, f"progress.py failed ({rc}): {err}")
    check(":3: not valid JSON" in err and "skipped" in err, f"the bad line 3 was not reported: {err!r}")
    for line in out.splitlines():
        check(len(line) <= 80, f"terminal line longer than 80 columns: {line!r}")
    check("\x1b" not in out, "the terminal chart has escape sequences (colour or a hostile hash)")
    check(WHERE in flat(out), f"the where-you-stand sentence is not {WHERE!r}:\n{out}")
    check("The pass threshold is 0.19x" in flat(out), "lab 07's threshold (3x the naive pipeline) is not said")
    check(f"measured on your GPU model ({H100})" in flat(out), "the ladder's GPU is not named")
    rows = [line for line in out.splitlines() if re.match(r"\s+\d+ \d\d-\d\d \d\d:\d\d ", line)]
    check(len(rows) == 5, f"expected 5 run rows in the terminal chart, got {len(rows)}:\n{out}")
    check(rows[3].rstrip().endswith("0.52x passed") and " fedcba98 " in rows[3] and "o" in rows[3][25:66],
          f"run 4's row is wrong: {rows[3]!r}")
    check(rows[0].rstrip().endswith("0.06x failed") and "x" in rows[0][25:66], f"run 1's row is wrong: {rows[0]!r}")

    with open(svg, encoding="utf-8") as f:
        markup = f.read()
    headless.check_inert(markup, svg, allow_xmlns=True)
    root, text = svg_texts(svg)
    for want in RUNG_LABELS + ["#1 11-20 14:02 aa11bb22", "#4 11-22 09:30 fedcba98", "pass: 3\u00d7 naive = 0.19\u00d7",
                               "#5 11-22 11:00 \"><scrip"]:
        check(want in text, f"{svg} lacks the text {want!r}")
    circles = list(root.iter(SVG_NS + "circle"))
    check(len(circles) == 5, f"expected 5 points in the SVG, got {len(circles)}")
    check(sum(1 for c in circles if c.get("fill") != "#ffffff") == 3, "expected 3 filled (passed) points")

    # A lab without a ladder: the lab's own gate; the sentence without rungs.
    hist5 = write_history(os.path.join(work, "lab05.jsonl"), RUNS[:2], lab="lab05_cudnn", required=0.769)
    rc, out, err = progress("--history", hist5, "--lab", "lab05_cudnn", "--svg", os.path.join(work, "lab05.svg"))
    check(rc == 0 and "none of your 2 runs has passed yet; your fastest (#2, 11-20 15:40) is 0.09x the reference." in flat(out)
          and "The pass threshold is 0.77x the reference." in flat(out) and "rung" not in out, f"lab 05's chart: {rc} {out} {err}")

    # The ladder measured on the student's GPU when bench/results has one, else the H100's ("roughly").
    ladders = os.path.join(work, "ladders")
    os.makedirs(ladders, exist_ok=True)
    shutil.copy(H100_CSV, ladders)
    with open(os.path.join(ladders, "lab07_a100_sxm4_80gb.csv"), "w") as f:
        f.write("source,version,name,mode,batch,median_ms,min_ms,us_per_image,gflop_per_s,percent_fp32_peak,device\n")
        for rung, name, ms in ((4, "constant_weights", 5.0), (8, "one_kernel", 1.0), (9, "register_blocked", 0.5),
                               (12, "tensor_cores", 0.25)):
            f.write(f"ladder,{rung},{name},device,10000,{ms},{ms},0,0,0,NVIDIA A100-SXM4-80GB\n")
            f.write(f"ladder,{rung},{name},device,1000,{ms / 20},{ms / 20},0,0,0,NVIDIA A100-SXM4-80GB\n")
    a100 = write_history(os.path.join(work, "a100.jsonl"), gpu="NVIDIA A100-SXM4-80GB (sm_80)")
    rc, out, _ = progress("--history", a100, "--lab", "lab07", "--svg", os.path.join(work, "a100.svg"), "--ladder-dir", ladders)
    check(rc == 0 and "between rung 08 one_kernel (0.50x) and rung 09 register_blocked (1.00x)" in flat(out)
          and "measured on your GPU model (NVIDIA A100-SXM4-80GB)" in flat(out), f"the A100 ladder was not picked:\n{out}")
    l4 = write_history(os.path.join(work, "l4.jsonl"), gpu="NVIDIA L4")
    rc, out, _ = progress("--history", l4, "--lab", "lab07", "--svg", os.path.join(work, "l4.svg"), "--ladder-dir", ladders)
    check(rc == 0 and f"measured on {H100}, your runs on NVIDIA L4" in flat(out) and "only roughly" in out,
          f"without a ladder of the student's GPU the H100's is not used (and said so):\n{out}")

    # Fields of the wrong type are drawn as well as they can be, never a crash.
    odd = os.path.join(work, "odd.jsonl")
    with open(odd, "w") as f:
        f.write(json.dumps({"lab": "lab07_optimized_cuda", "speedup": 0.2, "status": 5, "ci_low": "x", "ci_high": 10 ** 400,
                            "time": 17, "gpu": [], "files_hash": None, "speedup_vs_naive": "y"}) + "\n")
        f.write(json.dumps({"lab": "lab07", "speedup": 1e-9, "status": "passed", "ci_low": 2.0, "ci_high": 1.0}) + "\n")
        f.write("[1, 2]\n")
    rc, out, err = progress("--history", odd, "--lab", "7", "--svg", os.path.join(work, "odd.svg"))
    check(rc == 0 and "odd.jsonl:3: no lab" in err and "#2" in out, f"odd fields: {rc} {err}\n{out}")
    svg_texts(os.path.join(work, "odd.svg"))

    # Nothing to draw: say what to run, write nothing.
    empty = os.path.join(work, "empty.jsonl")
    open(empty, "w").close()
    for hist in (os.path.join(work, "missing.jsonl"), empty):
        rc, out, err = progress("--history", hist, "--lab", "lab07", "--svg", os.path.join(work, "none.svg"))
        check(rc == 1 and "./course grade lab07" in err and "NVIDIA GPU" in err and not os.path.exists(os.path.join(work, "none.svg")),
              f"a missing or empty history does not say what to run: {rc} {err!r}")
    return svg


def course_command(work):
    """`./course progress` end to end: the chart and the SVG's path, nothing built."""
    build = os.path.join(work, "build")
    os.makedirs(os.path.join(build, "progress"), exist_ok=True)
    write_history(os.path.join(build, "progress", "history.jsonl"))
    env = dict(os.environ, BUILD_DIR=build)
    env.pop("COURSE_PROGRESS_FILE", None)
    for args in (["lab07"], ["7"], ["lab07_optimized_cuda"], []):
        r = subprocess.run(["bash", os.path.join(ROOT, "course"), "progress"] + args, capture_output=True, text=True,
                           env=env, timeout=120)
        svg = os.path.join(build, "progress", "lab07_optimized_cuda.svg")
        check(r.returncode == 0 and WHERE in flat(r.stdout) and f"chart: {svg}" in r.stdout and os.path.isfile(svg),
              f"./course progress {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    check(sorted(os.listdir(build)) == ["progress"], f"./course progress built something: {os.listdir(build)}")
    r = subprocess.run(["bash", os.path.join(ROOT, "course"), "progress", "lab99"], capture_output=True, text=True, env=env)
    check(r.returncode != 0 and "unknown lab 'lab99'" in r.stderr, f"an unknown lab is not refused: {r.stderr!r}")
    r = subprocess.run(["bash", os.path.join(ROOT, "course"), "progress"], capture_output=True, text=True,
                       env=dict(env, BUILD_DIR=os.path.join(work, "fresh")))
    check(r.returncode != 0 and "./course grade lab07" in r.stderr, f"no history: not said what to run: {r.stderr!r}")


def chromium_checks(svg, work):
    chromium = headless.find_chromium()
    if not chromium:
        print("SKIPPED (Chromium half): no chromium on PATH (Debian: apt-get install chromium; "
              "./course test installs it)")
        sys.exit(headless.SKIP)
    dom = headless.dump_dom(chromium, svg)
    s = headless.parse(dom)
    tags = [tag for tag, _ in s.tags]
    check("svg" in tags and tags.count("circle") == 5, f"Chromium did not render the SVG's 5 points ({tags[:20]}...)")
    check("script" not in tags, "the rendered SVG has a <script> element")
    text = s.all_text()
    for want in RUNG_LABELS + ["#4 11-22 09:30 fedcba98"]:
        check(want in text, f"the SVG Chromium rendered lacks {want!r}")
    png = headless.screenshot(chromium, svg, os.path.join(work, "progress.png"), size="1200,700")
    colours = headless.png_distinct_pixels(png)
    check(colours >= 16, f"the screenshot {png} looks blank ({colours} distinct pixel values)")
    print(f"chromium: DOM and screenshot checked ({png}, >= {colours} distinct pixel values)")


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="progress-test-")
    os.makedirs(work, exist_ok=True)
    for old in ("build", "fresh"):  # what an earlier run left: ./course progress must start from nothing
        shutil.rmtree(os.path.join(work, old), ignore_errors=True)
    try:
        svg = static_checks(work)
        course_command(work)
        print(f"static checks and ./course progress passed: {svg}")
        chromium_checks(svg, work)
    except headless.Failure as e:
        print(f"FAILED: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
