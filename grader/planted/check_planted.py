#!/usr/bin/env python3
"""The planted-fault suite: proves that the tests and the grader catch real mistakes.

Each folder grader/planted/<fault>/ holds fault.json:
    lab      the lab whose solution gets the bug, e.g. "lab01_conv2d"
    file     the solution file to change, relative to the lab folder
    edits    [{"find": text, "replace": text}, ...]; each "find" must occur exactly once
    expect   texts that must all appear in the grader's report of that lab
    what     one line: the mistake
    also     other labs copied unchanged into the same submission (the labs the faulty lab builds
             on, e.g. lab04 uses lab02, lab03); they must still pass
  optional:
    status   "failed" (default) or "passed": an honest-but-unusual submission that must pass
    forbid   texts that must NOT appear in the report (e.g. an escape character, "LEAKED")
    symlink  true: the file becomes a symbolic link to the untouched solution file
    hardlink true: the file becomes a hard link to a copy of the untouched solution file kept
             outside the lab folder (the same file under a second name)
    sandbox  a sandbox mode (e.g. "user"): the fault is graded in a second run of its own with
             COURSE_SANDBOX set to it (an attack on that mode)
    prelude  the name of a file in grader/planted/_shared/ inserted after the file's last #include
             (after the edits): e.g. libc_past_symbol_check.inc, which makes calls such as fork()
             or fopen() reach the C library without naming it to the linker, so a fault aimed at
             the run-time sandbox is not stopped earlier by the build's symbol check
    transform "crlf_bom": the file is rewritten with CRLF line ends and a UTF-8 byte-order mark
    no_metrics true: the lab must report no leaderboard metric
    file_text the name of a file in the fault's folder that replaces the solution file whole
             (before the edits, which may then be []): a fault too large for find/replace
    expect_any texts of which at least one must appear (a fault caught either by the tests or,
             when they happen to pass, by the sanitizer gate: a race)
    other_files {"file in the lab": "file relative to the fault's folder", ...}: more files of the
             lab replaced whole, untouched by the edits -- a cheat planted on top of another
             fault's slow file (e.g. lab 08's scalar block under a memo in mobilenet.cu)
    refused_at_build true: the build itself must refuse the fault (a forbidden symbol such as
             dlopen). Such a fault of a GPU lab is graded on a machine without a GPU too, in a run
             of its own with --compile-gpu-labs, where the other GPU faults are left out
  In "replace" texts, {SOURCE_DIR} and {BUILD_DIR} stand for the course tree and the build tree
  (attacks aimed at them), {WORK_DIR} for WORK_DIR and {SUBMISSIONS_DIR} for the folder of
  submissions the fault is graded in.

The script builds one folder of submissions -- the untouched solutions, and per fault a copy of
the faulty lab (plus the labs it uses) with the edits applied -- grades it with ONE
`course_grader grade --submissions` run, and checks that the untouched solutions pass every
lab and that every fault fails its lab for the expected reason. Labs a fault's submission does
not contain are "not built" and ignored.

    check_planted.py GRADER SOURCE_DIR BUILD_DIR WORK_DIR [--timeout S]

Exit code 0 when every fault is caught for the right reason and the solutions pass.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys


def load_faults(planted_dir):
    faults = {}
    for spec_path in sorted(planted_dir.glob("*/fault.json")):
        spec = json.loads(spec_path.read_text())
        for key in ("lab", "file", "edits", "expect", "what"):
            if key not in spec:
                sys.exit(f"{spec_path}: missing '{key}'")
        faults[spec_path.parent.name] = spec
    return faults


def apply_edits(path, edits, fault, places):
    text = path.read_text()
    for edit in edits:
        count = text.count(edit["find"])
        if count != 1:
            sys.exit(f"planted fault {fault}: the text to replace occurs {count} times in {path} "
                     f"(the solution changed? update grader/planted/{fault}/fault.json):\n{edit['find']}")
        replace = edit["replace"]
        for key, value in places.items():
            replace = replace.replace("{" + key + "}", value)
        text = text.replace(edit["find"], replace)
    path.write_text(text)


def apply_fault(spec, target, original, fault, places, fault_dir):
    if spec.get("file_text"):
        shutil.copyfile(fault_dir / spec["file_text"], target)
    for name, source in spec.get("other_files", {}).items():
        other = target.parent / name
        if not other.is_file():
            sys.exit(f"planted fault {fault}: other_files names {name}, which the lab does not have")
        shutil.copyfile(fault_dir / source, other)
    apply_edits(target, spec["edits"], fault, places)
    if spec.get("prelude"):
        # A shared piece of attack code (grader/planted/_shared/), inserted after the file's last
        # #include line: e.g. calling C library functions past the build's symbol check.
        prelude = (fault_dir.parent / "_shared" / spec["prelude"]).read_text()
        lines = target.read_text().split("\n")
        last_include = max(i for i, line in enumerate(lines) if line.startswith("#include"))
        lines.insert(last_include + 1, prelude)
        target.write_text("\n".join(lines))
    if spec.get("symlink"):
        target.unlink()
        target.symlink_to(original.resolve())
    if spec.get("hardlink"):
        # A second name of a copy of the solution's file, kept outside the lab folder: a link to
        # the course's own file would give solutions/ a file with two names for as long as the
        # work folder lives, which the guard then rightly refuses in every later build.
        target.unlink()
        original_copy = target.parent.parent / f".hardlink-original-{target.name}"
        shutil.copyfile(original, original_copy)
        os.link(original_copy, target)
    if spec.get("transform") == "crlf_bom":
        text = target.read_text().replace("\r\n", "\n").replace("\n", "\r\n")
        target.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))


def fresh_dir(path):
    """`path` as an empty folder (what an earlier run left there removed); returns it."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def has_gpu():
    """An NVIDIA GPU with a working driver (what the grader's own check needs too)."""
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def all_text(value):
    """Every string inside a JSON value, joined (raw characters, not JSON escapes)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(all_text(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(all_text(v) for v in value)
    return ""


# A planted daemon names itself this way; none may outlive the grading run.
DAEMON_NAME = "course-daemon"


def stray_daemons():
    found = []
    for status in pathlib.Path("/proc").glob("[0-9]*/comm"):
        try:
            if status.read_text().strip() == DAEMON_NAME:
                found.append(status.parent.name)
        except OSError:
            pass
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("grader")
    parser.add_argument("source_dir", type=pathlib.Path)
    parser.add_argument("build_dir", type=pathlib.Path)
    parser.add_argument("work_dir", type=pathlib.Path)
    parser.add_argument("--timeout", default=None,
                        help="per-lab time limit (the infinite loop costs this much); default 30 s, or 60 s when "
                             "GPU labs are graded (lab 07's speed gates and sanitizers alone take 10-15 s)")
    parser.add_argument("--jobs", default="2")
    parser.add_argument("--only", action="append", default=[],
                        help="grade only the faults whose name starts with this (repeatable), e.g. lab06; the "
                             "untouched solutions then hold only the labs those faults change or use")
    args = parser.parse_args()

    solutions = args.source_dir / "solutions"
    faults = load_faults(args.source_dir / "grader" / "planted")
    if args.only:
        faults = {k: v for k, v in faults.items() if any(k.startswith(p) for p in args.only)}
    # GPU labs' faults need a GPU to be caught (without one the lab is skipped): left out here.
    manifest = json.loads((args.build_dir / "labs" / "manifest.json").read_text())
    gpu_labs = {lab["name"] for lab in manifest["labs"] if lab["device"] == "gpu"}
    gpu_here = has_gpu()
    # A fault the build must refuse needs no GPU to be caught, only the CUDA toolkit to compile its
    # lab: without a GPU those are graded apart, with --compile-gpu-labs (see build_refusals below).
    compiled_here = {lab["name"] for lab in manifest["labs"] if not lab.get("not_built_reason")}
    build_refusals = {}
    if not gpu_here:
        build_refusals = {k: v for k, v in faults.items()
                          if v["lab"] in gpu_labs and v.get("refused_at_build") and v["lab"] in compiled_here}
        left_out = [k for k, v in faults.items() if v["lab"] in gpu_labs and k not in build_refusals]
        faults = {k: v for k, v in faults.items() if v["lab"] not in gpu_labs or k in build_refusals}
        if left_out:
            print(f"no GPU here: the {len(left_out)} faults of GPU labs are left out ({', '.join(left_out)})")
        if build_refusals:
            print(f"no GPU here: {len(build_refusals)} faults the build must refuse are compiled anyway "
                  f"({', '.join(build_refusals)})")
    if len(faults) == 0:
        sys.exit("no planted faults found")

    subs = fresh_dir(args.work_dir / "planted")
    # With --only, the untouched solutions hold just the labs the chosen faults change or use (a
    # GPU lab's subset then fits one short run on a GPU machine); without it, every lab -- except,
    # without a GPU, the GPU labs, which would only be compiled (minutes of nvcc) to be skipped.
    if args.only or not gpu_here:
        involved = {lab for spec in faults.values() for lab in [spec["lab"], *spec.get("also", [])]}
        if not args.only:
            involved |= {lab["name"] for lab in manifest["labs"]} - gpu_labs
        if not gpu_here:
            # The build refusals' GPU labs: graded in their own run, never compiled untouched here.
            involved -= gpu_labs
        untouched_dir = subs / "solutions_untouched"
        for lab in sorted(involved):
            shutil.copytree(solutions / lab, untouched_dir / lab, copy_function=shutil.copy)
    else:
        involved = None
        shutil.copytree(solutions, subs / "solutions_untouched", copy_function=shutil.copy)
    # Folder names a batch must cope with: every one of these is graded like any other.
    odd_name = "odd = name; ü ç"
    check_odd_name = involved is None or "lab01_conv2d" in involved
    if check_odd_name:
        shutil.copytree(solutions / "lab01_conv2d", subs / odd_name / "lab01_conv2d", copy_function=shutil.copy)
    places = {"SOURCE_DIR": str(args.source_dir.resolve()), "BUILD_DIR": str(args.build_dir.resolve()),
              "WORK_DIR": str(args.work_dir.resolve())}
    # Faults aimed at one sandbox mode are graded in a run of their own, in a folder of their own.
    mode_dirs = {}
    refusals_dir = fresh_dir(args.work_dir / "planted_build_refusals") if build_refusals else None
    for name, spec in faults.items():
        folder = subs
        if name in build_refusals:
            folder = refusals_dir
        elif spec.get("sandbox"):
            if spec["sandbox"] not in mode_dirs:
                folder = mode_dirs[spec["sandbox"]] = fresh_dir(args.work_dir / f"planted_{spec['sandbox']}")
                # A classmate in the same batch (a target for the fault, and proof that honest
                # work passes in that mode too).
                for lab in sorted(involved) if involved is not None else [p.name for p in solutions.iterdir() if p.is_dir()]:
                    shutil.copytree(solutions / lab, folder / "solutions_untouched" / lab, copy_function=shutil.copy)
            folder = mode_dirs[spec["sandbox"]]
        for lab in [spec["lab"], *spec.get("also", [])]:
            shutil.copytree(solutions / lab, folder / name / lab, copy_function=shutil.copy)
        apply_fault(spec, folder / name / spec["lab"] / spec["file"], solutions / spec["lab"] / spec["file"], name,
                    dict(places, SUBMISSIONS_DIR=str(folder.resolve())), args.source_dir / "grader" / "planted" / name)

    if args.timeout is None:
        grades_gpu_lab = any(spec["lab"] in gpu_labs for spec in faults.values())
        # 30 s for the CPU labs: the untouched lab 04 needs ~2 s alone, but once took more than 15 s
        # on a 2-core machine busy with the other slow tests, which failed the whole suite; only
        # lab01_infinite_loop waits the limit out, so the margin costs ~15 s.
        args.timeout = "60" if grades_gpu_lab else "30"

    def grade(folder, results_path, extra_env, labs=None, extra_args=()):
        command = [args.grader, "grade", "--submissions", str(folder), "--source-dir", str(args.source_dir),
                   "--build-dir", str(args.build_dir), "--json", str(results_path), "--timeout", args.timeout,
                   "--memory-mb", "1024", "--jobs", args.jobs, *extra_args]
        labs = labs if labs is not None else involved
        if labs is not None:
            command += sorted(labs)  # grade just those labs
        print("running:", " ".join(f"{k}={v}" for k, v in extra_env.items()), " ".join(command), flush=True)
        # A planted compiler bomb costs this long, not the default 300 s.
        env = dict(os.environ, COURSE_BUILD_TIMEOUT_S="30", **extra_env)
        completed = subprocess.run(command, env=env)
        if completed.returncode not in (0, 1):
            sys.exit(f"the grader failed to run (exit code {completed.returncode})")
        doc = json.loads(results_path.read_text())
        if "submissions" in doc:
            return doc["submissions"]
        # A folder of one submission (e.g. a single build refusal) gets that submission's own report.
        (only,) = [p.name for p in folder.iterdir() if p.is_dir()]
        return {only: doc}

    # Without a GPU and with only build refusals chosen (--only), the main run would grade nothing.
    results = grade(subs, args.work_dir / "planted_results.json", {}) if involved != set() else {}
    if build_refusals:
        # No untouched classmate here: its GPU lab would only be compiled (minutes of nvcc) to be
        # skipped. A refusal that slipped through is skipped too -- not "failed", so it shows.
        results.update(grade(refusals_dir, args.work_dir / "planted_results_build_refusals.json", {},
                             labs={lab for spec in build_refusals.values() for lab in [spec["lab"], *spec.get("also", [])]},
                             extra_args=["--compile-gpu-labs"]))
    for mode, folder in sorted(mode_dirs.items()):
        for key, value in grade(folder, args.work_dir / f"planted_results_{mode}.json", {"COURSE_SANDBOX": mode}).items():
            results[f"solutions_untouched_{mode}" if key == "solutions_untouched" else key] = value

    problems = []
    daemons = stray_daemons()
    if daemons:
        problems.append(f"planted daemons outlived the grading run: pids {daemons}")
        for pid in daemons:
            subprocess.run(["kill", "-9", pid])
    odd = [r for key, r in results.items() if key not in faults and not key.startswith("solutions_untouched")]
    if check_odd_name and (len(odd) != 1 or any(t.get("status") != "passed" for t in odd[0]["tests"]
                            if t["name"].split(" ")[0] == "lab01_conv2d")):
        problems.append(f"the submission in the folder {odd_name!r} was not graded as passing: {list(results)}")
    for key in [k for k in results if k.startswith("solutions_untouched")]:
        for test in results[key]["tests"]:
            if test.get("status") == "failed":
                problems.append(f"untouched solutions ({key}): {test['name']} failed:\n{test['output']}")
    print(f"\n{'fault':40} {'lab':28} caught")
    for name, spec in faults.items():
        lab_tests = [t for t in results[name]["tests"] if t["name"].split(" ")[0] == spec["lab"]]
        if not lab_tests:
            problems.append(f"{name}: {spec['lab']} was not graded")
            continue
        test = lab_tests[0]
        output = test["output"]
        missing = [e for e in spec["expect"] if e not in output]
        if spec.get("expect_any") and not any(e in output for e in spec["expect_any"]):
            missing.append(f"one of {spec['expect_any']}")
        missing += [f"no {f!r}" for f in spec.get("forbid", []) if f in all_text(test)]
        if spec.get("no_metrics") and test.get("extra_data", {}).get("metrics"):
            missing.append("no metrics")
        if spec.get("no_metrics"):
            board = results[name].get("leaderboard", [])
            if board:
                missing.append(f"an empty leaderboard, not {board}")
        caught = test.get("status") == spec.get("status", "failed") and not missing
        first_line = output.splitlines()[0] if output else ""
        print(f"{name:40} {spec['lab']:28} {'yes' if caught else 'NO '}  {first_line[:110]}")
        if not caught:
            problems.append(f"{name} ({spec['what']}): status {test.get('status')}, expected "
                            f"{spec.get('status', 'failed')} and {missing or spec['expect']} in the report:\n{output}")
        # The unchanged labs of the same submission still build and pass: a fault (even a compile
        # error) costs only its own lab.
        for other in spec.get("also", []):
            other_tests = [t for t in results[name]["tests"] if t["name"].split(" ")[0] == other]
            if not other_tests or other_tests[0].get("status") != "passed":
                problems.append(f"{name}: the unchanged {other} should pass in the same submission")
    if problems:
        print("\nPROBLEMS:\n" + "\n\n".join(problems), file=sys.stderr)
        return 1
    also_odd = " and the oddly named submission" if check_odd_name else ""
    print(f"\nall {len(faults)} planted faults caught (honest-but-unusual ones passed); the untouched solutions"
          f"{also_odd} pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
