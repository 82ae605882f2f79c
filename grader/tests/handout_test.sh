#!/usr/bin/env bash
# grader.handout: export a student handout, build it from scratch and grade it.
#   handout_test.sh GRADER SOURCE_DIR WORK_DIR
# Checks: no solutions/ or planted faults in the copy; its CMake builds only the exercises and
# nothing in its build refers to a solutions folder; every lab fails, saying "not implemented";
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

set +e
out="$("$export_dir/build/grader/course_grader" grade --solutions --source-dir "$export_dir" --build-dir "$export_dir/build" 2>&1)"
status=$?
set -e
[ "$status" -eq 2 ] || fail "--solutions in a handout should be a usage error (2), got $status: $out"
echo "$out" | grep -q "no solutions/" || fail "--solutions should explain that the handout has no solutions: $out"

mentions=$(grep -rIl "solutions/" "$export_dir" --exclude-dir=build | wc -l)
echo "note: $mentions text files of the handout mention 'solutions/' in prose (not a build reference)"
echo "PASS: the handout builds and grades without solutions/"
