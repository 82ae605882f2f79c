#!/usr/bin/env python3
"""grader.report_html: the instructor's report on a synthetic merged record of a dozen students
(three GPU labs with speed-ups and gates, failed cases, a compile failure, hostile names and
messages, infrastructure problems, a not-graded student), checked twice:
  1. statically: nothing the page could load or run, the numbers worked out by hand below;
  2. in headless Chromium: the DOM it renders (sections, pass rates, hostile strings only as
     text, no payload ran) and a screenshot that is not blank.
Without Chromium the second half exits 77 (CTest: skipped) after the first half passed.

    test_instructor_report.py [WORK_DIR]
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import headless  # noqa: E402
from headless import check  # noqa: E402

REPORT = os.path.join(HERE, "instructor_report.py")

# Payloads that leave a mark on the page if they ever run (an alert would go unseen headless).
MARK = "document.body.setAttribute('data-pwned','{}')"
SCRIPT_NAME = "<script>alert(1)</script>"
IMG_NAME = '"><img src=x onerror="' + MARK.format("name") + '">'
CASE_MSG = "expected 1.5, got <b>2</b></pre><script>" + MARK.format("message") + "</script>"
COMPILE_REASON = ("does not compile: conv2d.cpp:3:1: error: '\x1b[31m<img src=x onerror=\"" + MARK.format("reason")
                  + "\">\x1b[0m' was not declared")
ANSI_MSG = "\x1b[31mFAILED\x1b[0m speed-up 0.70x is below 0.77x \u202eevil"
HOSTILE_HOST = 'node07"><svg onload="' + MARK.format("host") + '">'
INTERFERENCE = "the GPU was not ours: the reference ran 1.4x slower after your block than before"
HOSTILE_DETAILS = "exercises/lab01_conv2d/</style><style>body{display:none}</style>.cpp"

H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"
GATES = {"lab05_cudnn": 0.769, "lab06_naive_cuda": 0.5, "lab07_optimized_cuda": 0.0}
NAIVE_PER_REFERENCE = 15.95  # lab 07: the naive pipeline is this many times slower than the reference


def case(name, passed=True, message="", exception=""):
    return {"name": name, "passed": passed, "seconds": 0.1, "messages": [message] if message else [], "exception": exception}


def cpu_lab(status="passed", reason="", cases=None, details=""):
    return {"lab": "lab01_conv2d", "device": "cpu", "status": status, "reason": reason, "skipped_because": "",
            "hint": "", "details": details, "infrastructure": "", "sandbox": "bwrap", "sandbox_degraded": False, "cases": [case("conv2d: identity kernel")] if cases is None else cases,
            "metrics": [], "seconds": 0.5, "build_seconds": 2.0, "files_hash": "00112233aabbccdd"}


def gpu_lab(lab, speedup=None, status=None, infrastructure="", reason="", message=""):
    """A GPU lab result; with a speed-up, passed/failed follows the gate unless given."""
    required = GATES[lab]
    entry = {"lab": lab, "device": "gpu", "reason": reason, "skipped_because": "", "hint": "", "details": "",
             "infrastructure": infrastructure, "sandbox": "bwrap", "sandbox_degraded": infrastructure == "degraded sandbox",
             "cases": [case("correctness")], "metrics": [],
             "seconds": 3.0, "build_seconds": 1.0, "files_hash": "1a2b3c4d5e6f7a8b"}
    if speedup is not None:
        naive_ok = speedup * NAIVE_PER_REFERENCE >= 3.0
        ok = speedup >= required if required > 0 else naive_ok
        entry["status"] = status or ("passed" if ok else "failed")
        entry["speedup"] = {"point": speedup, "low": round(speedup * 0.97, 3), "high": round(speedup * 1.03, 3), "required": required}
        entry["metrics"] = [{"name": "speedup_vs_reference", "value": speedup, "test_case": "speed"},
                            {"name": "pipeline_ms", "value": round(0.27 / speedup, 4), "test_case": "speed"}]
        if lab == "lab07_optimized_cuda":
            entry["metrics"] += [{"name": "speedup_vs_naive", "value": speedup * NAIVE_PER_REFERENCE, "test_case": "naive"},
                                 {"name": "speedup_vs_naive_required", "value": 3.0, "test_case": "naive"}]
        if entry["status"] == "failed":
            speed_case = ("speed: FastLeNet on 10,000 images against the lab 06 naive pipeline (the pass threshold)"
                          if lab == "lab07_optimized_cuda" else "speed: against the reference")
            entry["cases"].append(case(speed_case, False, message or f"{speedup:.2f}x is below the gate"))
    else:
        entry["status"] = status
    return entry


def skipped(lab):
    e = gpu_lab(lab, status="skipped")
    e.update(skipped_because="no NVIDIA GPU on this machine", reason="this lab needs a GPU", cases=[])
    return e


def student(name, gpu, host, labs, not_graded=""):
    return {"name": name, "folder": "/submissions/" + name, "seed": 42, "host": host, "gpu": gpu,
            "gpu_reason": "" if gpu else "no NVIDIA GPU on this node", "slurm_job": f"100_{host[-2:]}" if host else "",
            "not_graded": not_graded, "labs": labs}


def make_record():
    L5, L6, L7 = "lab05_cudnn", "lab06_naive_cuda", "lab07_optimized_cuda"

    def gpu3(s5, s6, s7):
        return [x if isinstance(x, dict) else gpu_lab(lab, x) for lab, x in ((L5, s5), (L6, s6), (L7, s7))]

    subs = [
        student("alice", H100, "node01", [cpu_lab()] + gpu3(1.02, 1.10, 1.05)),
        student("bob", H100, "node02", [cpu_lab()] + gpu3(0.98, gpu_lab(L6, status="failed", infrastructure="timeout",
                                                                         reason="timed out after 60 s"), 0.98)),
        student("carol", A100, "node03", [cpu_lab()] + gpu3(
            gpu_lab(L5, 0.60, infrastructure="GPU interference", message=INTERFERENCE),
            1.05, 0.52)),
        student("dave", A100, "node04", [cpu_lab("failed", "1 of 2 test cases failed",
                                                 [case("conv2d: identity kernel"), case("conv2d: 3x3 kernel", False, CASE_MSG)])] + gpu3(0.95, 1.00, 0.45)),
        student("erin", H100, "node05", [cpu_lab("failed", COMPILE_REASON, [], HOSTILE_DETAILS)] + gpu3(0.91, 0.97, 0.42)),
        student(SCRIPT_NAME, H100, "node06", [cpu_lab()] + gpu3(0.88, 0.90, 0.30)),
        student(IMG_NAME, H100, HOSTILE_HOST, [cpu_lab()] + gpu3(0.85, 0.80, 0.25)),
        student("frank", H100, "node08", [cpu_lab()] + gpu3(0.80, 0.75, 0.19)),
        student("grace", A100, "node09", [cpu_lab()] + gpu3(gpu_lab(L5, 0.70, message=ANSI_MSG), 0.45, 0.12)),
        student("heidi", H100, "node10", [cpu_lab()] + gpu3(0.79, 0.30, gpu_lab(L7, 0.09, infrastructure="degraded sandbox",
                                                                              reason="the sandbox ran in mode none"))),
        student("judy", "", "node11", [cpu_lab(), skipped(L5), skipped(L6), skipped(L7)]),
        student("mallory", "", "", [], not_graded="no results file: task 11 ended NODE_FAIL"),
    ]
    subs[10]["labs"][0]["sandbox"] = "user: a dedicated unprivileged uid"  # judy's task ran elsewhere
    return {"schema": "course-results/1", "seed": 123456789, "batch": True, "points_per_lab": 10,
            "hidden_cases": False, "sandbox": {"mode": "bwrap", "degraded": False, "description": "bubblewrap"},
            "started_at": "2026-11-25T03:00:00Z", "seconds": 812.5, "submissions": subs,
            "merged_from": [f"task{i}.json" for i in range(12)]}


# Worked out by hand from the table above (not from the report's code).
EXPECTED_TEXT = [
    "9 / 11 graded passed (82%)",   # lab01: dave (a case) and erin (compile) failed; mallory has no result
    "8 / 10 graded passed (80%)",   # lab05: carol 0.60, grace 0.70 < 0.769; judy skipped
    "7 / 10 graded passed (70%)",   # lab06: bob timeout, grace 0.45, heidi 0.30 < 0.5; judy skipped
    "8 / 10 graded passed (80%)",   # lab07: grace 0.12, heidi 0.09 are below 3x the naive (0.188x)
    "10 students measured",         # lab05
    "9 students measured",          # lab06 (bob timed out)
    "8 of 10 at or above",          # lab05's gate
    "7 of 9 at or above",           # lab06's gate
    "gate 0.769\u00d7", "gate 0.5\u00d7", "gate 3\u00d7",
    "Measured only: no gate against the reference",  # lab07 vs the reference
    "12 (11 with results)",         # students
    "123456789", "bwrap", "labs ran in different sandboxes", "user: a dedicated unprivileged uid (1 lab results)",
    f"{H100} (7)", f"{A100} (3)", "no GPU: 2",
    "whole lab: does not compile",
    "40 / 40",                      # alice
    "10 / 10",                      # judy: only the CPU lab counts
    "NOT GRADED: no results file: task 11 ended NODE_FAIL",
    "1.050\u00d7",                  # alice on the lab 07 leaderboard
    "Infrastructure problems: re-grade these",
    "GPU interference", "timeout", "degraded sandbox", "not graded",
    INTERFERENCE,                   # the reason of carol's interference: her failed case's message
    "100_03",                       # carol's Slurm task, to re-submit
]
HOSTILE_TEXT = [SCRIPT_NAME, IMG_NAME, "expected 1.5, got <b>2</b></pre><script>", HOSTILE_HOST,
                "\ufffd[31mFAILED\ufffd[0m speed-up 0.70x", HOSTILE_DETAILS]


def run_report(record, work, name, title=None):
    src, out = os.path.join(work, name + ".json"), os.path.join(work, name + ".html")
    with open(src, "w") as f:
        json.dump(record, f)
    cmd = [sys.executable, REPORT, src, out] + (["--title", title] if title else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr}")
    with open(out, encoding="utf-8") as f:
        return out, f.read()


def infra_rows(structure):
    """Student names in the infrastructure table (rows of class "infra" with 5 cells)."""
    return [attrs for tag, attrs in structure.tags if tag == "tr" and attrs.get("class") == "infra"]


def static_checks(work):
    record = make_record()
    path, page = run_report(record, work, "class", title='CS 4XX <b>"GPU"</b> & friends')
    s = headless.check_inert(page, path)
    text = s.all_text()
    for t in EXPECTED_TEXT + HOSTILE_TEXT:
        check(t in text, f"{path}: the page's text lacks {t!r}")
    check('CS 4XX <b>"GPU"</b> & friends' in text, "the --title is not shown as text")
    check("\x1b" not in page and "\u202e" not in page, "an escape or bidi character reached the page")
    check(len(infra_rows(s)) == 4, f"expected 4 infrastructure rows (bob, carol, heidi, mallory), got {len(infra_rows(s))}")
    # Labs 05 and 06 against the reference, lab 07 against the naive pipeline (none vs its reference).
    gates = page.count('class="gate"')
    check(gates == 3, f"expected 3 gate lines, got {gates}")
    check(page.count("<svg") == 4, f"expected 4 histograms (labs 05, 06, 07 twice), got {page.count('<svg')}")

    # The whole run in a degraded sandbox: said at the top and in the infrastructure section.
    degraded = copy.deepcopy(record)
    degraded["sandbox"] = {"mode": "none", "degraded": True, "description": "no isolation"}
    _, page = run_report(degraded, work, "degraded")
    text = headless.check_inert(page, "degraded").all_text()
    check("DEGRADED sandbox" in text and "all 12 students must be re-graded" in text, "a degraded run is not flagged")

    # Empty inputs: no students; only a CPU lab (no speed-ups anywhere).
    empty = dict(record, submissions=[])
    _, page = run_report(empty, work, "empty")
    text = headless.check_inert(page, "empty").all_text()
    check("This record has no students" in text and "0 (0 with results)" in text, "an empty record is not explained")
    cpu_only = copy.deepcopy(record)
    for sub in cpu_only["submissions"]:
        sub["labs"] = [lab for lab in sub["labs"] if lab["lab"] == "lab01_conv2d"]
    _, page = run_report(cpu_only, work, "cpu_only")
    text = headless.check_inert(page, "cpu_only").all_text()
    check("No lab in this record measured a speed-up" in text and "<svg" not in page, "a record without GPU labs is not explained")

    # GPU labs graded elsewhere (Gradescope: --gpu-elsewhere): all skipped, none graded, said so.
    elsewhere = copy.deepcopy(record)
    for sub in elsewhere["submissions"]:
        for lab in sub["labs"]:  # judy's too: 11 students with results
            if lab["device"] == "gpu":
                lab.update(status="skipped", skipped_because="graded on the cluster", speedup=None, metrics=[], infrastructure="")
    _, page = run_report(elsewhere, work, "elsewhere")
    text = headless.check_inert(page, "elsewhere").all_text()
    check(text.count("nobody graded in this lab") == 3 and "11 skipped, not counted (graded on the cluster: 11)" in text,
          "GPU labs graded elsewhere are not reported as such")

    # Fields of the wrong type (a hand-edited or truncated merge input) are skipped, not a crash.
    odd = {"schema": "course-results/1", "seed": 10 ** 400, "points_per_lab": "ten", "sandbox": [],
           "submissions": [7, "x", None, {"name": 12, "labs": 5},
                           {"name": "oscar", "gpu": 3, "labs": [1, {"lab": 2}, {"lab": "lab05_cudnn", "status": None, "metrics": "x",
                                                                                 "cases": 5, "speedup": "fast", "infrastructure": 9}]},
                           {"name": "peggy", "labs": [{"lab": "lab05_cudnn", "status": "failed", "cases": [3, {"passed": False, "messages": "m"}],
                                                       "speedup": {"point": float("inf")}, "metrics": [{"name": "pipeline_ms", "value": "1"}]}]}]}
    _, page = run_report(odd, work, "odd")
    check("oscar" in headless.check_inert(page, "odd").all_text(), "a record with odd fields lost its students")
    run_report({"schema": "course-results/1"}, work, "bare")

    # A record the real grader wrote (fixtures/cpu_batch_merged.json: `course_grader grade
    # --submissions` of lab 01 for alice (the solution), bob (does not compile), carol (no bias),
    # then `course_grader merge --expect` with dave, who has no results; outputs emptied).
    with open(os.path.join(HERE, "fixtures", "cpu_batch_merged.json")) as f:
        real = json.load(f)
    _, page = run_report(real, work, "real")
    text = headless.check_inert(page, "real").all_text()
    for want in ("1 / 3 graded passed (33%)", "whole lab: does not compile", "expected primary-expression",
                 "lab01 lecture example: two channels are summed, then the bias is added", "got 2, expected 2.5",
                 "NOT GRADED: no results", "4 (3 with results)", "none (built without the CUDA toolkit)", "10 / 10"):
        check(want in text, f"the report of the grader's own record lacks {want!r}")

    # Not a record: refused with a message naming the file, no page written.
    bad = os.path.join(work, "bad.json")
    with open(bad, "w") as f:
        f.write('{"schema": "something-else"}')
    r = subprocess.run([sys.executable, REPORT, bad, os.path.join(work, "bad.html")], capture_output=True, text=True)
    check(r.returncode != 0 and "course-results/1" in r.stderr and not os.path.exists(os.path.join(work, "bad.html")),
          f"a wrong schema was not refused: {r.returncode} {r.stderr}")
    return path


def chromium_checks(path, work):
    chromium = headless.find_chromium()
    if not chromium:
        print("SKIPPED (Chromium half): no chromium on PATH (Debian: apt-get install chromium; "
              "./course test installs it)")
        sys.exit(headless.SKIP)
    dom = headless.dump_dom(chromium, path)
    s = headless.parse(dom)
    text = s.all_text()
    for tag, attrs in s.tags:
        check(tag not in ("script", "img", "iframe"), f"the rendered DOM has a <{tag}> element")
        check(not any(a.startswith("on") or "pwned" in a for a in attrs), f"the rendered DOM has <{tag} {attrs}>")
    for t in EXPECTED_TEXT + HOSTILE_TEXT:
        check(t in text, f"the DOM Chromium rendered lacks {t!r}")
    sections = [attrs.get("id") for tag, attrs in s.tags if tag in ("h2", "section") and attrs.get("id")]
    for want in ("labs", "lab-0", "lab-3", "infra", "gradebook"):
        check(want in sections, f"the rendered DOM lacks the section #{want} (has {sections})")
    check(sum(1 for tag, _ in s.tags if tag == "svg") == 4, "Chromium did not keep the 4 inline SVG histograms")

    png = headless.screenshot(chromium, path, os.path.join(work, "report.png"))
    colours = headless.png_distinct_pixels(png)
    check(colours >= 16, f"the screenshot {png} looks blank ({colours} distinct pixel values)")
    print(f"chromium: DOM and screenshot checked ({png}, >= {colours} distinct pixel values)")


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="report-test-")
    os.makedirs(work, exist_ok=True)
    try:
        path = static_checks(work)
        print(f"static checks passed: {path}")
        chromium_checks(path, work)
    except headless.Failure as e:
        print(f"FAILED: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
