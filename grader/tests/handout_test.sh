#!/usr/bin/env bash
# grader.handout: export a student handout, build it from scratch and grade it.
#   handout_test.sh GRADER SOURCE_DIR WORK_DIR
# Checks: no solutions/ or planted faults in the copy; its CMake builds only the exercises and
# nothing in its build refers to a solutions folder; every lab fails, saying "not implemented"
# (without a GPU the GPU labs are skipped uncompiled; every file they compile must preprocess);
# asking for --solutions there is a usage error. The exported copy is left in
# WORK_DIR/autograder/source for grader.gradescope, which builds on it.
set -euo pipefail
grader="$1" source="$2" work="$3"
export_dir="$work/autograder/source"
jobs="${COURSE_BUILD_JOBS:-2}"
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work/autograder"
"$grader" handout "$export_dir" --source-dir "$source"

[ -d "$export_dir/exercises" ] || fail "no exercises/ in the handout"
[ -x "$export_dir/course" ] || [ ! -e "$source/course" ] || fail "./course lost its executable bit"
[ ! -e "$export_dir/solutions" ] || fail "solutions/ was exported"
[ ! -e "$export_dir/grader/planted" ] || fail "grader/planted/ was exported"
if find "$export_dir" -type d -name hidden | grep -q .; then fail "a hidden/ folder was exported"; fi

# What ./course setup would add: the converted data set (copied, to avoid a download here).
if [ -d "$source/data/generated" ]; then cp -r "$source/data/generated" "$export_dir/data/"; fi

echo "== configuring and building the handout from scratch"
cmake -S "$export_dir" -B "$export_dir/build" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; fail "the handout does not configure"; }
grep -qx "COURSE_VARIANTS:STRING=exercises=$export_dir/exercises" "$export_dir/build/CMakeCache.txt" ||
  fail "COURSE_VARIANTS should hold only the exercises: $(grep COURSE_VARIANTS "$export_dir/build/CMakeCache.txt")"
cmake --build "$export_dir/build" --target course_grader --parallel "$jobs" >"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log"; fail "the grader does not build in the handout"; }

echo "== grading the handout's exercises"
set +e
"$export_dir/build/grader/course_grader" grade --source-dir "$export_dir" --build-dir "$export_dir/build" \
  --jobs "$jobs" --json "$work/handout-results.json" | tee "$work/handout-grade.txt"
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 1 ] || fail "grading the skeletons should exit with 1, got $status"
python3 - "$work/handout-results.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
tests = results["tests"]
assert tests, "no labs were graded"
for t in tests:
    if "skipped" in t["name"]:
        continue  # a GPU lab on a machine without a GPU
    assert t["status"] == "failed", t["name"] + " should fail in a handout"
    assert "not implemented" in t["output"], t["name"] + " should fail with 'not implemented':\n" + t["output"]
print("every lab fails with 'not implemented':", ", ".join(t["name"] for t in tests))
PY

# Nothing in the generated build or the manifest points at a solutions folder.
if grep -rl --include=Makefile --include='*.make' --include='*.cmake' --include='*.json' --include='*.ninja' \
     -e "/solutions" "$export_dir/build" | grep -v "/CMakeFiles/[0-9.]*/" | grep -q .; then
  grep -rl --include=Makefile --include='*.make' --include='*.cmake' --include='*.json' -e "/solutions" "$export_dir/build" >&2
  fail "the handout's build refers to a solutions folder"
fi

# Without a GPU the grader skips the GPU labs without compiling them (the main build, which
# compiles every .cu file, is where CI compiles them). What only a handout could break is a file
# it lacks: every compile command of the GPU labs in the handout's build is run through the
# preprocessor (-E), which reads every #include, in seconds instead of minutes of nvcc.
echo "== the GPU labs' sources preprocess in the handout"
pp_args=("$export_dir/build/compile_commands.json" "$export_dir/build/labs/manifest.json" "$export_dir" "$jobs")
python3 - "${pp_args[@]}" <<'PY' || fail "the GPU labs do not preprocess in the handout (above): a file they include is missing"
import json, os, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
commands, manifest, export, jobs = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], int(sys.argv[4])
labs = [l["name"] for l in manifest["labs"] if l["device"] == "gpu" and not l.get("not_built_reason")]
if not labs:
    print("no GPU lab is built here (no CUDA toolkit): nothing to preprocess")
    sys.exit(0)
folders = [f"{export}/{where}/{lab}/" for lab in labs for where in ("exercises", "grader/labs")]
chosen = [c for c in commands if any(c["file"].startswith(f) for f in folders)]
assert chosen, f"no compile command of {labs} in the handout's build"
def preprocess(entry):
    args, out, skip = shlex.split(entry["command"]), [], 0
    for i, a in enumerate(args):
        if skip:
            skip -= 1
        elif a in ("-o", "-MF", "-MT"):
            skip = 1
        elif a not in ("-MD", "-MMD"):
            out.append("-E" if a == "-c" else a)
    done = subprocess.run(out + ["-o", "/dev/null"], cwd=entry["directory"], capture_output=True, text=True)
    return entry["file"], done.returncode, done.stderr
with ThreadPoolExecutor(jobs) as pool:
    failed = [r for r in pool.map(preprocess, chosen) if r[1] != 0]
for file, code, err in failed:
    print(f"FAIL: {file} does not preprocess in the handout (exit {code}):\n{err[-3000:]}")
if failed:
    sys.exit(1)
print(f"{len(chosen)} compile commands of {', '.join(labs)} preprocess in the handout")
PY

set +e
out="$("$export_dir/build/grader/course_grader" grade --solutions --source-dir "$export_dir" --build-dir "$export_dir/build" 2>&1)"
status=$?
set -e
[ "$status" -eq 2 ] || fail "--solutions in a handout should be a usage error (2), got $status: $out"
echo "$out" | grep -q "no solutions/" || fail "--solutions should explain that the handout has no solutions: $out"

mentions=$(grep -rIl "solutions/" "$export_dir" --exclude-dir=build | wc -l)
echo "note: $mentions text files of the handout mention 'solutions/' in prose (not a build reference)"
echo "PASS: the handout builds and grades without solutions/"
