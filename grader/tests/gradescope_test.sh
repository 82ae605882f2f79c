#!/usr/bin/env bash
# grader.gradescope: the Gradescope scripts end to end, in a temporary /autograder layout.
#   gradescope_test.sh SOURCE_DIR WORK_DIR
# Uses the handout grader.handout exported to WORK_DIR/autograder/source as the autograder
# source (what grader/gradescope/package.sh zips), runs setup.sh (packages skipped), then
# run_autograder on an upload made of the course's solutions -- lab01 as a loose file, lab02 in
# its lab folder, lab03 inside a copy of exercises/, lab04 missing -- with one hidden case.
set -euo pipefail
source="$1" work="$2"
root="$work/autograder"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -d "$root/source/build" ] || fail "run grader.handout first (it exports the autograder source)"

cp "$source/grader/gradescope/setup.sh" "$source/grader/gradescope/run_autograder" "$root/source/"
mkdir -p "$root/source/hidden"
echo '{"cases": [{"n": 1, "c": 2, "h": 6, "w": 5, "k": 3, "r": 3, "s": 2, "name": "instructor case"}]}' \
  >"$root/source/hidden/lab01_conv2d.json"

echo "== setup.sh"
AUTOGRADER_ROOT="$root" COURSE_SKIP_PACKAGES=1 COURSE_BUILD_JOBS="${COURSE_BUILD_JOBS:-2}" \
  bash "$root/source/setup.sh"

rm -rf "$root/submission" "$root/results"
mkdir -p "$root/submission/lab02_padding_stride" "$root/submission/mywork/exercises" "$root/results"
cp "$source/solutions/lab01_conv2d/conv2d.cpp" "$root/submission/"
cp "$source/solutions/lab02_padding_stride/"*.cpp "$root/submission/lab02_padding_stride/"
cp -r "$source/solutions/lab03_pooling_activations" "$root/submission/mywork/exercises/"

echo "== run_autograder"
start=$(date +%s)
AUTOGRADER_ROOT="$root" bash "$root/source/run_autograder"
echo "run_autograder took $(( $(date +%s) - start )) s"

python3 - "$root/results/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
by_name = {t["name"].split(" ")[0]: t for t in r["tests"]}
for lab in ("lab01_conv2d", "lab02_padding_stride", "lab03_pooling_activations"):
    assert by_name[lab]["status"] == "passed", lab + ":\n" + by_name[lab]["output"]
lab04 = by_name.get("lab04_lenet_cpu")
if lab04 is not None:
    assert lab04["status"] == "failed" and "not implemented" in lab04["output"], lab04["output"]
assert r["score"] == 10 * 3, r["score"]
assert r["max_score"] == 10 * len([t for t in r["tests"] if t["max_score"] > 0])
assert all(t["visibility"] == "visible" for t in r["tests"])
print("results.json: score %s of %s" % (r["score"], r["max_score"]))
PY
echo "PASS: Gradescope setup.sh + run_autograder"
