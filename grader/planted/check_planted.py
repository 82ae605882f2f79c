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


def apply_edits(path, edits, fault):
    text = path.read_text()
    for edit in edits:
        count = text.count(edit["find"])
        if count != 1:
            sys.exit(f"planted fault {fault}: the text to replace occurs {count} times in {path} "
                     f"(the solution changed? update grader/planted/{fault}/fault.json):\n{edit['find']}")
        text = text.replace(edit["find"], edit["replace"])
    path.write_text(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("grader")
    parser.add_argument("source_dir", type=pathlib.Path)
    parser.add_argument("build_dir", type=pathlib.Path)
    parser.add_argument("work_dir", type=pathlib.Path)
    parser.add_argument("--timeout", default="15", help="per-lab time limit (the infinite loop costs this much)")
    parser.add_argument("--jobs", default="2")
    args = parser.parse_args()

    solutions = args.source_dir / "solutions"
    faults = load_faults(args.source_dir / "grader" / "planted")
    if len(faults) == 0:
        sys.exit("no planted faults found")

    subs = args.work_dir / "planted"
    if subs.exists():
        shutil.rmtree(subs)
    subs.mkdir(parents=True)
    shutil.copytree(solutions, subs / "solutions_untouched", copy_function=shutil.copy)
    for name, spec in faults.items():
        for lab in [spec["lab"], *spec.get("also", [])]:
            shutil.copytree(solutions / lab, subs / name / lab, copy_function=shutil.copy)
        apply_edits(subs / name / spec["lab"] / spec["file"], spec["edits"], name)

    results_path = args.work_dir / "planted_results.json"
    command = [args.grader, "grade", "--submissions", str(subs), "--source-dir", str(args.source_dir),
               "--build-dir", str(args.build_dir), "--json", str(results_path), "--timeout", args.timeout,
               "--memory-mb", "1024", "--jobs", args.jobs]
    print("running:", " ".join(command), flush=True)
    completed = subprocess.run(command)
    if completed.returncode not in (0, 1):
        sys.exit(f"the grader failed to run (exit code {completed.returncode})")
    results = json.loads(results_path.read_text())["submissions"]

    problems = []
    untouched = results["solutions_untouched"]["tests"]
    for test in untouched:
        if test.get("status") == "failed":
            problems.append(f"untouched solutions: {test['name']} failed:\n{test['output']}")
    print(f"\n{'fault':40} {'lab':28} caught")
    for name, spec in faults.items():
        lab_tests = [t for t in results[name]["tests"] if t["name"].split(" ")[0] == spec["lab"]]
        if not lab_tests:
            problems.append(f"{name}: {spec['lab']} was not graded")
            continue
        test = lab_tests[0]
        output = test["output"]
        missing = [e for e in spec["expect"] if e not in output]
        caught = test.get("status") == "failed" and not missing
        first_line = output.splitlines()[0] if output else ""
        print(f"{name:40} {spec['lab']:28} {'yes' if caught else 'NO '}  {first_line[:110]}")
        if not caught:
            problems.append(f"{name} ({spec['what']}): status {test.get('status')}, expected {spec['expect']} "
                            f"in the report:\n{output}")
        # The unchanged labs of the same submission still build and pass: a fault (even a compile
        # error) costs only its own lab.
        for other in spec.get("also", []):
            other_tests = [t for t in results[name]["tests"] if t["name"].split(" ")[0] == other]
            if not other_tests or other_tests[0].get("status") != "passed":
                problems.append(f"{name}: the unchanged {other} should pass in the same submission")
    if problems:
        print("\nPROBLEMS:\n" + "\n\n".join(problems), file=sys.stderr)
        return 1
    print(f"\nall {len(faults)} planted faults caught; the untouched solutions pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
