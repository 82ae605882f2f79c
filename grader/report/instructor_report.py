#!/usr/bin/env python3
"""The instructor's report: one self-contained HTML page from a merged course-results/1 record.

    instructor_report.py RESULTS.json OUT.html [--title TEXT]

RESULTS.json is what `course_grader grade ... --results` or `course_grader merge --results` wrote.
The page has no script and loads nothing (inline CSS, inline SVG), so it can be mailed, archived
and opened offline. Every string that came from a student (names, messages, reasons, details,
file names) is treated as hostile: it only ever reaches the page through esc().
Python 3 standard library only.
"""
import argparse
import collections
import datetime
import html
import json
import math
import re
import sys

SCHEMA = "course-results/1"
LEADERBOARD_SHOWN = 20  # rows of each leaderboard shown open; the rest behind a <details>

# Characters that have no business in a report: C0/C1 controls (ANSI escapes start with ESC),
# zero-width and bidi-override characters (they reorder what the reader sees) and lone surrogates
# (json.loads lets them through; writing them as UTF-8 would fail). Tab and newline stay.
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")


def esc(value, limit=None):
    """Any value as inert HTML text, safe in element content AND in quoted attribute values."""
    text = "" if value is None else str(value)
    text = _INVISIBLE.sub("\ufffd", text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + "\u2026"
    return html.escape(text, quote=True)


def num(value):
    """A finite number, or None (the record is machine-written, but a merge of hand-edited
    files must not crash the report)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value) if math.isfinite(value) else None
    except OverflowError:  # an integer beyond any float
        return None


def as_list(value):
    """A JSON list, or [] for anything else (a field of the wrong type is skipped, not a crash)."""
    return value if isinstance(value, list) else []


def text_of(value):
    return value if isinstance(value, str) else ""


def fmt(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def pct(part, whole):
    return "-" if whole == 0 else f"{100.0 * part / whole:.0f}%"


# --- reading the record ---------------------------------------------------------------------


def load(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            record = json.load(f)
    except OSError as e:
        sys.exit(f"instructor_report: cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        sys.exit(f"instructor_report: {path} is not JSON ({e}); give the file that "
                 "`course_grader grade --results` or `course_grader merge --results` wrote")
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        sys.exit(f"instructor_report: {path} is not a {SCHEMA} record (no \"schema\": \"{SCHEMA}\"); "
                 "give the file that `course_grader ... --results` wrote")
    return record


def submissions_of(record):
    subs = [s for s in as_list(record.get("submissions")) if isinstance(s, dict)]
    return sorted(subs, key=lambda s: text_of(s.get("name")))


def labs_of(sub):
    return [lab for lab in as_list(sub.get("labs")) if isinstance(lab, dict) and isinstance(lab.get("lab"), str)]


def metric(lab, name):
    for m in as_list(lab.get("metrics")):
        if isinstance(m, dict) and m.get("name") == name:
            return num(m.get("value"))
    return None


def speedup_of(lab):
    """(point, low, high, required) vs the reference, or None when the lab measured none."""
    s = lab.get("speedup")
    if isinstance(s, dict) and num(s.get("point")) is not None:
        return num(s.get("point")), num(s.get("low")), num(s.get("high")), num(s.get("required")) or 0.0
    point = metric(lab, "speedup_vs_reference")
    if point is None:
        return None
    return (point, metric(lab, "speedup_ci_low"), metric(lab, "speedup_ci_high"),
            metric(lab, "speedup_vs_reference_required") or 0.0)


def first_message(case):
    for m in as_list(case.get("messages")):
        if isinstance(m, str) and m.strip():
            return m
    return text_of(case.get("exception"))


def slurm_task(sub):
    """Where a student was graded in Slurm ("<array job>_<task>"), or ""."""
    if text_of(sub.get("slurm_job")):
        return sub["slurm_job"]
    slurm = sub.get("slurm")
    if isinstance(slurm, dict) and text_of(slurm.get("array_job_id")):
        return f"{slurm['array_job_id']}_{text_of(slurm.get('array_task_id'))}"
    return ""


def problem_reason(lab):
    """Why a lab hit an infrastructure problem, in the record's own words: its reason, else the
    first message of a failed case (the speed gate's "the GPU was not ours" is one)."""
    for key in ("reason", "skipped_because", "details"):
        if text_of(lab.get(key)):
            return lab[key]
    for c in as_list(lab.get("cases")):
        if isinstance(c, dict) and c.get("passed") is False and first_message(c):
            return first_message(c)
    return ""


def infrastructure_problems(record, subs):
    """(student, lab, problem, reason, Slurm task) rows: everything whose result says more about
    the machine than about the student's code."""
    rows = []
    run_degraded = run_sandbox(record).get("degraded") is True
    for sub in subs:
        name, task = text_of(sub.get("name")), slurm_task(sub)
        if text_of(sub.get("not_graded")):
            rows.append((name, "all labs", "not graded", text_of(sub.get("not_graded")), task))
        for lab in labs_of(sub):
            problem = text_of(lab.get("infrastructure"))
            if not problem and lab.get("sandbox_degraded") is True and not run_degraded:
                problem = "degraded sandbox"
            if problem:
                rows.append((name, lab["lab"], problem, problem_reason(lab), task))
    return rows


def run_sandbox(record):
    return record.get("sandbox") if isinstance(record.get("sandbox"), dict) else {}


# --- SVG ------------------------------------------------------------------------------------


def nice_ticks(lo, hi):
    """Tick values m x 10^k inside [lo, hi] (a log axis): the mantissas 1-2-5, or finer ones when
    the range is narrow (0.6-1.1 has only 1 among 1-2-5); at least the two ends."""
    ticks = []
    for mantissas in ((1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0 ** k for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
                 for m in mantissas if lo <= m * 10.0 ** k <= hi]
        if len(ticks) >= 3:
            return ticks
    return sorted(set(ticks + [lo, hi]))


def tick_label(v):
    return f"{v:.3g}\u00d7"


def svg_histogram(values, gate, axis_label, caption_id):
    """Counts of `values` in equal bins of a log axis, the gate (when > 0) as a labelled line.
    Speed-ups are ratios: 0.5x and 2x are the same distance from 1x, hence the log axis."""
    W, H, left, right, top, bottom = 680, 240, 48, 24, 34, 52
    pw, ph = W - left - right, H - top - bottom
    lo, hi = min(values), max(values)
    if gate > 0:
        lo, hi = min(lo, gate), max(hi, gate)
    lo_l, hi_l = math.log10(lo), math.log10(hi)
    if hi_l - lo_l < 0.3:  # one value, or all close: widen so the bars do not fill the whole axis
        mid = (hi_l + lo_l) / 2
        lo_l, hi_l = mid - 0.15, mid + 0.15
    pad = (hi_l - lo_l) * 0.05
    lo_l, hi_l = lo_l - pad, hi_l + pad
    bins = 14
    counts = [0] * bins
    for v in values:
        i = int((math.log10(v) - lo_l) / (hi_l - lo_l) * bins)
        counts[min(max(i, 0), bins - 1)] += 1
    top_count = max(counts)

    def x_of(v):
        return left + (math.log10(v) - lo_l) / (hi_l - lo_l) * pw

    out = [f'<svg class="hist" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" role="img" aria-labelledby="{caption_id}">',
           f'<title id="{caption_id}">{esc(axis_label)}: histogram of {len(values)} students</title>',
           f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" class="axis"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" class="axis"/>']
    bw = pw / bins
    for i, c in enumerate(counts):
        if c == 0:
            continue
        h = ph * c / top_count
        x = left + i * bw
        lo_edge, hi_edge = 10 ** (lo_l + i * (hi_l - lo_l) / bins), 10 ** (lo_l + (i + 1) * (hi_l - lo_l) / bins)
        out.append(f'<rect class="bar" x="{x + 1:.1f}" y="{top + ph - h:.1f}" width="{bw - 2:.1f}" height="{h:.1f}">'
                   f'<title>{c} between {lo_edge:.3g}\u00d7 and {hi_edge:.3g}\u00d7</title></rect>')
        out.append(f'<text class="count" x="{x + bw / 2:.1f}" y="{top + ph - h - 4:.1f}" text-anchor="middle">{c}</text>')
    for t in nice_ticks(10 ** lo_l, 10 ** hi_l):
        x = x_of(t)
        out.append(f'<line x1="{x:.1f}" y1="{top + ph}" x2="{x:.1f}" y2="{top + ph + 5}" class="axis"/>')
        out.append(f'<text class="tick" x="{x:.1f}" y="{top + ph + 18}" text-anchor="middle">{tick_label(t)}</text>')
    out.append(f'<text class="tick" x="{left + pw / 2}" y="{H - 10}" text-anchor="middle">{esc(axis_label)} (log scale)</text>')
    out.append(f'<text class="tick" x="12" y="{top + ph / 2}" text-anchor="middle" transform="rotate(-90 12 {top + ph / 2})">students</text>')
    if gate > 0:
        x = x_of(gate)
        anchor = "end" if x > left + pw * 0.7 else "start"
        dx = -4 if anchor == "end" else 4
        out.append(f'<line class="gate" x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" y2="{top + ph}"/>')
        out.append(f'<text class="gate-label" x="{x + dx:.1f}" y="{top - 12}" text-anchor="{anchor}">gate {gate:.3g}\u00d7</text>')
    out.append("</svg>")
    return "\n".join(out)


# --- HTML sections --------------------------------------------------------------------------

CSS = """
body { font: 15px/1.45 system-ui, sans-serif; color: #1d2328; background: #fff; margin: 0 auto; max-width: 1120px; padding: 0 20px 40px; }
h1 { font-size: 26px; margin: 22px 0 6px; } h2 { font-size: 21px; margin: 34px 0 8px; border-bottom: 2px solid #d7dde2; }
h3 { font-size: 17px; margin: 22px 0 6px; }
table { border-collapse: collapse; margin: 8px 0 16px; } th, td { border: 1px solid #d7dde2; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eef2f5; } td { overflow-wrap: anywhere; } td.n, td.gpu { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; overflow-wrap: normal; } td.gpu { text-align: left; }
summary { cursor: pointer; margin: 6px 0; }
code, pre { font: 13px/1.35 ui-monospace, monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
.meta td:first-child { font-weight: 600; background: #f6f8fa; }
.banner { padding: 10px 14px; border-radius: 6px; margin: 12px 0; font-weight: 600; }
.bad { background: #fde8e8; border: 1px solid #e2a3a3; } .ok { background: #e6f4ea; border: 1px solid #9fd1ac; }
.note { color: #56606a; }
.rate { font-size: 18px; font-weight: 600; }
.passed { background: #e6f4ea; } .failed { background: #fde8e8; } .skipped { background: #f1f1f1; color: #56606a; } .infra { background: #fff4d6; }
svg.hist { display: block; margin: 6px 0; } svg .axis { stroke: #56606a; stroke-width: 1; }
svg .bar { fill: #4f7fb8; } svg .count, svg .tick { font: 12px system-ui, sans-serif; fill: #1d2328; }
svg .gate { stroke: #c0392b; stroke-width: 2; stroke-dasharray: 6 4; } svg .gate-label { font: 600 13px system-ui, sans-serif; fill: #c0392b; }
nav a { margin-right: 12px; }
"""


def header_section(record, subs, title):
    sandbox = run_sandbox(record)
    # The run's mode; each lab also records the sandbox it ran in, and a merge of many tasks may
    # have several: then each with its count.
    per_lab = collections.Counter(text_of(lab.get("sandbox")) for s in subs for lab in labs_of(s) if text_of(lab.get("sandbox")))
    sandbox_text = esc(sandbox.get("mode") or "unknown")
    if text_of(sandbox.get("description")):
        sandbox_text += f' <span class="note">({esc(sandbox["description"], 200)})</span>'
    if len(per_lab) > 1:
        sandbox_text += "<br>labs ran in different sandboxes: " + "; ".join(
            f"{esc(d, 120)} ({n} lab results)" for d, n in per_lab.most_common())
    gpus = collections.Counter(text_of(s.get("gpu")) for s in subs if text_of(s.get("gpu")))
    no_gpu = sum(1 for s in subs if not text_of(s.get("gpu")))
    gpu_text = ", ".join(f"{esc(g)} ({n})" for g, n in gpus.most_common())
    if not gpus:
        reason = text_of(record.get("gpu_reason")) or next((text_of(s.get("gpu_reason")) for s in subs if text_of(s.get("gpu_reason"))), "")
        gpu_text = "none" + (f" ({esc(reason, 200)})" if reason else "")
    elif no_gpu:
        gpu_text += f"; no GPU: {no_gpu}"
    graded = sum(1 for s in subs if not text_of(s.get("not_graded")))
    when = esc(text_of(record.get("started_at")) or "unknown")
    if num(record.get("seconds")) is not None:
        when += f" (ran {num(record.get('seconds')):.0f} s)"
    rows = [("Seed", esc(record.get("seed", "unknown")) + ' <span class="note">(COURSE_SEED replays it)</span>'),
            ("Students", f"{len(subs)} ({graded} with results)"),
            ("Sandbox", sandbox_text),
            ("GPUs seen", gpu_text),
            ("Graded at", when),
            ("Report made", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))]
    merged = record.get("merged_from")
    if isinstance(merged, list):
        rows.append(("Merged from", f"{len(merged)} results files"))
    if record.get("hidden_cases"):
        rows.append(("Cases", "hidden cases (no program output in the record)"))
    out = [f"<h1>{esc(title)}</h1>", '<table class="meta">']
    out += [f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows]
    out.append("</table>")
    if sandbox.get("degraded"):
        out.append('<p class="banner bad">DEGRADED sandbox: student code ran without isolation '
                   f'({esc(sandbox.get("description"))}). These results are not official grades: '
                   "re-grade in a real sandbox (bwrap, unshare or user).</p>")
    return "\n".join(out)


def lab_summary(lab_name, subs, points_per_lab):
    entries = [(s, lab) for s in subs for lab in labs_of(s) if lab["lab"] == lab_name]
    status = collections.Counter(text_of(lab.get("status")) for _, lab in entries)
    passed, failed, skipped = status["passed"], status["failed"], status["skipped"]
    graded = passed + failed
    infra = sum(1 for _, lab in entries if text_of(lab.get("infrastructure")))
    missing = len(subs) - len(entries)
    rate = (f"{passed} / {graded} graded passed ({pct(passed, graded)})" if graded
             else "nobody graded in this lab")  # e.g. every GPU lab "graded on the cluster"
    out = [f'<p class="rate">{rate}</p>', "<p>"]
    extra = [f"{failed} failed"] if graded else []
    if skipped:
        reasons = collections.Counter(text_of(lab.get("skipped_because")) or text_of(lab.get("reason"))
                                      for _, lab in entries if lab.get("status") == "skipped")
        extra.append(f"{skipped} skipped, not counted (" +
                     "; ".join(f"{esc(r or 'no reason given', 120)}: {n}" for r, n in reasons.most_common(3)) + ")")
    if infra:
        extra.append(f"{infra} with an infrastructure problem (see below: re-grade them)")
    if missing:
        extra.append(f"{missing} without a result for this lab")
    out.append((", ".join(extra) or "no results") + ".</p>")
    return out, entries


def speed_section(lab_name, entries, hist_id):
    measured = []
    for sub, lab in entries:
        s = speedup_of(lab)
        if s is not None and s[0] is not None and s[0] > 0:
            measured.append((sub, lab, s))
    if not measured:
        return ["<p class=\"note\">No speed-ups measured for this lab (a CPU lab, or no GPU ran it).</p>"]
    out = []
    gates = collections.Counter(s[3] for _, _, s in measured)
    gate = gates.most_common(1)[0][0]
    values = [s[0] for _, _, s in measured]
    above = sum(1 for v in values if gate > 0 and v >= gate)
    out.append(f"<h3>Speed-up vs the reference</h3>")
    values_sorted = sorted(values)
    median = values_sorted[len(values) // 2] if len(values) % 2 else sum(values_sorted[len(values) // 2 - 1:len(values) // 2 + 1]) / 2
    line = (f"<p>{len(values)} students measured: median {median:.3g}\u00d7, "
            f"range {min(values):.3g}\u00d7 to {max(values):.3g}\u00d7. ")
    line += (f"Gate: at least {gate:.3g}\u00d7 ({above} of {len(values)} at or above).</p>" if gate > 0
             else "Measured only: no gate against the reference.</p>")
    if len(gates) > 1:
        line += f'<p class="note">The gate differs between students ({", ".join(f"{g:.3g}" for g in gates)}): the line shows the most common.</p>'
    out.append(line)
    out.append(svg_histogram(values, gate, "speed-up vs the reference", hist_id))
    # Lab 07's pass threshold is against the naive pipeline: its own histogram and gate.
    naive = [(metric(lab, "speedup_vs_naive"), metric(lab, "speedup_vs_naive_required") or 0.0) for _, lab, _ in measured]
    naive = [(v, g) for v, g in naive if v is not None and v > 0]
    if naive:
        ngate = collections.Counter(g for _, g in naive).most_common(1)[0][0]
        nvals = [v for v, _ in naive]
        out.append("<h3>Speed-up vs the naive pipeline (lab 06's solution)</h3>")
        out.append(f"<p>{len(nvals)} measured; " + (f"pass threshold {ngate:.3g}\u00d7 "
                   f"({sum(1 for v in nvals if v >= ngate)} at or above).</p>" if ngate > 0 else "no threshold recorded.</p>"))
        out.append(svg_histogram(nvals, ngate, "speed-up vs the naive pipeline", hist_id + "n"))
    out.append("<h3>Leaderboard</h3>")
    head = ('<tr><th>#</th><th>Student</th><th>Speed-up</th><th>95% CI</th>' + ("<th>vs naive</th>" if naive else "")
            + "<th>Pipeline ms</th><th>GPU</th><th>Host</th><th>Status</th></tr>")
    out.append("<table>" + head)
    measured.sort(key=lambda t: (-t[2][0], text_of(t[0].get("name"))))
    for rank, (sub, lab, (point, low, high, _)) in enumerate(measured, 1):
        if rank == LEADERBOARD_SHOWN + 1:  # a class of 300: the rest folds away (no script needed)
            out.append(f"</table><details><summary>all {len(measured)} students</summary><table>" + head)
        ci = f"{fmt(low)} \u2013 {fmt(high)}" if low is not None and high is not None else "-"
        status = text_of(lab.get("status"))
        out.append(f'<tr><td class="n">{rank}</td><td>{esc(sub.get("name"))}</td><td class="n">{point:.3f}\u00d7</td>'
                   f'<td class="n">{ci}</td>'
                   + (f'<td class="n">{fmt(metric(lab, "speedup_vs_naive"), 1)}\u00d7</td>' if naive else "")
                   + f'<td class="n">{fmt(metric(lab, "pipeline_ms"), 3)}</td>'
                   f'<td class="gpu">{esc(sub.get("gpu")) or "-"}</td><td>{esc(sub.get("host")) or "-"}</td>'
                   f'<td class="{status if status in ("passed", "failed", "skipped") else ""}">{esc(status)}</td></tr>')
    out.append("</table></details>" if len(measured) > LEADERBOARD_SHOWN else "</table>")
    return out


def failures_section(entries):
    """The tests failed most often, each with the first message seen. A lab that failed as a whole
    (does not compile, crashed before any case) is grouped by its reason's first words. Results
    with an infrastructure problem are left out: they say nothing about the code (listed apart)."""
    counts = collections.Counter()
    example = {}
    for sub, lab in entries:
        if lab.get("status") != "failed" or text_of(lab.get("infrastructure")):
            continue
        failed_cases = [c for c in as_list(lab.get("cases")) if isinstance(c, dict) and c.get("passed") is False]
        if failed_cases:
            for c in failed_cases:
                key = ("case", text_of(c.get("name")) or "(unnamed case)")
                counts[key] += 1
                example.setdefault(key, (text_of(sub.get("name")), first_message(c)))
        else:
            reason = text_of(lab.get("reason")) or "failed (no reason given)"
            key = ("lab", reason.split(":", 1)[0].strip()[:80])
            counts[key] += 1
            example.setdefault(key, (text_of(sub.get("name")), reason + ("\n" + text_of(lab.get("details")) if text_of(lab.get("details")) else "")))
    if not counts:
        return ['<p class="note">No failed tests.</p>']
    out = ["<h3>Tests failed most often</h3>",
           "<table><tr><th>Failed</th><th>Test</th><th>First message (and whose)</th></tr>"]
    for (kind, name), n in counts.most_common(10):
        who, msg = example[(kind, name)]
        label = f"<code>{esc(name, 200)}</code>" if kind == "case" else f"whole lab: {esc(name)}"
        out.append(f'<tr><td class="n">{n}</td><td>{label}</td><td><pre>{esc(msg, 600) or "(no message)"}</pre>'
                   f'<span class="note">{esc(who, 80)}</span></td></tr>')
    out.append("</table>")
    if len(counts) > 10:
        out.append(f'<p class="note">{len(counts) - 10} more tests failed less often.</p>')
    return out


def infrastructure_section(record, subs):
    rows = infrastructure_problems(record, subs)
    out = ['<h2 id="infra">Infrastructure problems: re-grade these</h2>']
    sandbox = run_sandbox(record)
    if sandbox.get("degraded"):
        out.append(f'<p class="banner bad">The whole run used a DEGRADED sandbox ({esc(sandbox.get("mode"))}): '
                   f"all {len(subs)} students must be re-graded in a real sandbox before their grades count.</p>")
    if not rows:
        out.append('<p class="ok banner">No student hit a timeout, a degraded sandbox, GPU interference, '
                   "a worker crash or a missing result.</p>" if not sandbox.get("degraded") else "")
        return out
    out.append("<p>These results say more about the machine than about the student's code (a timeout, "
               "a degraded sandbox, GPU interference, a crashed worker, a task with no results). "
               "Re-grade each one, e.g. <code>course_grader grade --submissions DIR --only NAME ...</code> "
               "(per-student seeds: re-grading one student changes no one else's result).</p>")
    out.append("<table><tr><th>Student</th><th>Lab</th><th>Problem</th><th>Reason</th><th>Slurm task</th><th>Action</th></tr>")
    for name, lab, problem, reason, task in rows:
        out.append(f'<tr class="infra"><td>{esc(name)}</td><td>{esc(lab)}</td><td>{esc(problem)}</td>'
                   f"<td><pre>{esc(reason, 400) or '-'}</pre></td><td>{esc(task) or '-'}</td><td>re-grade</td></tr>")
    out.append("</table>")
    return out


def gradebook_section(subs, lab_names, points_per_lab):
    out = ['<h2 id="gradebook">Gradebook</h2>']
    if not subs:
        return out + ['<p class="note">No students in this record.</p>']
    out.append(f'<p class="note">{points_per_lab:g} points per graded lab; skipped labs count 0 of 0 '
               "(as in results.json). \u26a0 = infrastructure problem, re-grade.</p>")
    out.append("<table><tr><th>Student</th>" + "".join(f"<th>{esc(n)}</th>" for n in lab_names) + "<th>Total</th></tr>")
    for sub in subs:
        if text_of(sub.get("not_graded")):
            out.append(f'<tr><td>{esc(sub.get("name"))}</td><td class="infra" colspan="{len(lab_names) + 1}">'
                       f'NOT GRADED: {esc(sub.get("not_graded"), 200)}</td></tr>')
            continue
        by_lab = {lab["lab"]: lab for lab in labs_of(sub)}
        cells, got, possible = [], 0.0, 0.0
        for n in lab_names:
            lab = by_lab.get(n)
            if lab is None:
                cells.append("<td>-</td>")
                continue
            status = text_of(lab.get("status"))
            cls = status if status in ("passed", "failed", "skipped") else ""
            mark = ""
            if text_of(lab.get("infrastructure")):
                cls, mark = "infra", " \u26a0"
            if status in ("passed", "failed"):
                possible += points_per_lab
                got += points_per_lab if status == "passed" else 0
            cells.append(f'<td class="{cls}">{esc(status.upper())}{mark}</td>')
        out.append(f'<tr><td>{esc(sub.get("name"))}</td>{"".join(cells)}<td class="n">{got:g} / {possible:g}</td></tr>')
    out.append("</table>")
    return out


def render(record, title):
    subs = submissions_of(record)
    lab_names = sorted({lab["lab"] for s in subs for lab in labs_of(s)})
    points = num(record.get("points_per_lab"))
    points = 10.0 if points is None else points
    body = [header_section(record, subs, title)]
    body.append('<nav><a href="#labs">Labs</a><a href="#infra">Infrastructure problems</a>'
                '<a href="#gradebook">Gradebook</a></nav>')
    body.append('<h2 id="labs">Labs</h2>')
    if not subs:
        body.append('<p class="note">This record has no students: nothing was graded.</p>')
    elif not lab_names:
        body.append('<p class="note">No lab results in this record (every student is listed as not graded below).</p>')
    for i, lab_name in enumerate(lab_names):
        # Lab names come from the grader, but the record is only a file: escape them too.
        body.append(f'<section id="lab-{i}"><h2>{esc(lab_name)}</h2>')
        summary, entries = lab_summary(lab_name, subs, points)
        body += summary
        body += speed_section(lab_name, entries, f"hist{i}")
        body += failures_section(entries)
        body.append("</section>")
    if subs and lab_names and not any(speedup_of(lab) for s in subs for lab in labs_of(s)):
        body.append('<p class="note">No lab in this record measured a speed-up (no GPU lab ran): '
                    "no histograms or leaderboards.</p>")
    body += infrastructure_section(record, subs)
    body += gradebook_section(subs, lab_names, points)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            # No network at all, even if something slipped through: the page may load nothing.
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
            f"<title>{esc(title)}</title>\n<style>{CSS}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description="One self-contained HTML page from a course-results/1 record.")
    parser.add_argument("results", help="the merged results JSON (course_grader ... --results)")
    parser.add_argument("out", help="the HTML file to write")
    parser.add_argument("--title", default="Course results", help="the page's title")
    args = parser.parse_args(argv)
    page = render(load(args.results), args.title)
    try:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:
        sys.exit(f"instructor_report: cannot write {args.out}: {e.strerror}")
    print(f"instructor_report: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
