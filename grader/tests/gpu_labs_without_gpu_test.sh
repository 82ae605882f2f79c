#!/usr/bin/env bash
# grader.gpu_labs_without_gpu: on a machine without a GPU, `course_grader grade` reports a GPU lab
# skipped WITHOUT compiling it (nothing could run it), and `--compile-gpu-labs` compiles it and
# runs its program, whose own check finds no GPU: skipped again, never passed, exit code 0 both
# times. Runs in the course's build folder, where the main build has compiled every lab already
# (that build is the test suite's one place that compiles all the CUDA), so it costs seconds.
#   gpu_labs_without_gpu_test.sh GRADER SOURCE_DIR BUILD_DIR WORK_DIR
# Skipped (77) on a machine with a GPU: there the GPU labs are graded for real (solutions.*).
set -uo pipefail
grader="$1" source="$2" build="$3" work="$4"
fail() { echo "FAIL: $*" >&2; exit 1; }
if nvidia-smi -L >/dev/null 2>&1; then
  echo "a GPU is here: the GPU labs are built and graded for real (solutions.*, grader.planted)"
  exit 77
fi
lab=$(python3 -c 'import json, sys
print(next(l["name"] for l in json.load(open(sys.argv[1]))["labs"] if l["device"] == "gpu"))' "$build/labs/manifest.json") ||
  fail "no GPU lab in $build/labs/manifest.json"
mkdir -p "$work"

# $1: what the run is called, $2: text the lab's reason must hold, $3: text it must not hold; the
# rest: extra grader arguments.
grade_and_check() {
  local what="$1" must="$2" must_not="$3"
  shift 3
  local json="$work/$what.json"
  rm -f "$json"
  NO_COLOR=1 "$grader" grade "$lab" --source-dir "$source" --build-dir "$build" --json "$json" "$@" >"$work/$what.log" 2>&1
  local status=$?
  cat "$work/$what.log"
  [ "$status" -eq 0 ] || fail "$what: the grader exited with $status (a skipped lab fails nothing)"
  python3 - "$json" "$lab" "$must" "$must_not" <<'PY' || fail "$what: the report is wrong (above)"
import json, sys
path, lab, must, must_not = sys.argv[1:]
tests = json.load(open(path))["tests"]
assert len(tests) == 1, tests
t = tests[0]
assert t["name"] == lab + " (skipped: no GPU)", t["name"]
assert t.get("status") != "passed" and t["score"] == 0 and t["max_score"] == 0, t
assert must in t["output"], f"{must!r} not in the report: {t['output']}"
assert must_not not in t["output"], f"{must_not!r} in the report: {t['output']}"
PY
}

grade_and_check default "not compiled here" "no usable GPU"
grade_and_check compiled "needs a CUDA GPU (" "not compiled here" --compile-gpu-labs
echo "PASS: $lab is skipped without a GPU, compiled only with --compile-gpu-labs"
