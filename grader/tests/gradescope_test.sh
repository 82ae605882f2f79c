#!/usr/bin/env bash
# grader.gradescope: the Gradescope scripts end to end, in a temporary /autograder layout.
#   gradescope_test.sh SOURCE_DIR WORK_DIR [BUILD_DIR]
# Uses the handout grader.handout exported to WORK_DIR/autograder/source as the autograder
# source (what grader/gradescope/package.sh zips), with one hidden case and a stand-in reference
# worker, runs setup.sh (packages skipped), then run_autograder on an upload made of the course's
# solutions -- lab01 as a loose file, lab02 in its lab folder, lab03 inside a copy of exercises/,
# lab04 missing. Checks the scores, that the GPU labs say "graded on the cluster" (0 of 0, never
# passed), where setup.sh put the reference worker and that run_autograder left $ROOT root-only.
# As root it forces the sandbox mode Gradescope gets (root without namespaces: `user`);
# grader.gradescope_hostile then attacks that setup. With BUILD_DIR (the course's build) it also
# checks what package.sh puts in the zip.
set -euo pipefail
source="$1" work="$2" build="${3:-}"
root="$work/autograder"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -d "$root/source/build" ] || fail "run grader.handout first (it exports the autograder source)"
unset COURSE_GRADESCOPE_GPU COURSE_GPU_ELSEWHERE
if [ "$(id -u)" = 0 ]; then
  export COURSE_SANDBOX=user
  echo "running as root: COURSE_SANDBOX=user (what Gradescope's containers give)"
fi

cp "$source/grader/gradescope/setup.sh" "$source/grader/gradescope/run_autograder" "$root/source/"
mkdir -p "$root/source/hidden"
echo '{"cases": [{"n": 1, "c": 2, "h": 6, "w": 5, "k": 3, "r": 3, "s": 2, "name": "instructor case"}]}' \
  >"$root/source/hidden/lab01_conv2d.json"
# What package.sh ships from a CUDA build: setup.sh must install it root-only where the grader
# looks. A stand-in (never run: the GPU labs are graded elsewhere here).
mkdir -p "$root/source/reference_workers"
printf '#!/bin/sh\necho stand-in reference worker\n' >"$root/source/reference_workers/lab05_cudnn.worker"
chmod 0755 "$root/source/reference_workers/lab05_cudnn.worker"

echo "== setup.sh"
AUTOGRADER_ROOT="$root" COURSE_SKIP_PACKAGES=1 COURSE_BUILD_JOBS="${COURSE_BUILD_JOBS:-2}" \
  bash "$root/source/setup.sh"

rm -rf "$root/submission" "$root/results"
mkdir -p "$root/submission/lab02_padding_stride" "$root/submission/mywork/exercises" "$root/results"
cp "$source/solutions/lab01_conv2d/conv2d.cpp" "$root/submission/"
cp "$source/solutions/lab02_padding_stride/"*.cpp "$root/submission/lab02_padding_stride/"
cp -r "$source/solutions/lab03_pooling_activations" "$root/submission/mywork/exercises/"

installed="$root/source/build/labs/solutions"
[ -f "$installed/lab05_cudnn.worker" ] || fail "setup.sh did not install the reference worker in $installed"
[ ! -e "$root/source/reference_workers" ] || fail "setup.sh left source/reference_workers/ behind"
[ "$(stat -c %a "$installed")" = 700 ] || fail "$installed is $(stat -c %a "$installed"), not 700"
[ "$(stat -c %a "$installed/lab05_cudnn.worker")" = 700 ] || fail "the installed reference worker is not 700"
if [ "$(id -u)" = 0 ]; then
  [ "$(stat -c %U "$installed/lab05_cudnn.worker")" = root ] || fail "the installed reference worker is not root's"
fi

echo "== run_autograder"
start=$(date +%s)
AUTOGRADER_ROOT="$root" bash "$root/source/run_autograder" | tee "$work/gradescope-grade.txt"
echo "run_autograder took $(( $(date +%s) - start )) s"
if [ "$(id -u)" = 0 ]; then
  grep -q "^sandbox: user:" "$work/gradescope-grade.txt" || fail "as root the grading should run in sandbox mode user (above)"
fi

for closed in "$root" "$root/results" "$root/source" "$root/source/hidden" "$root/staged" "$root/submission"; do
  mode="$(stat -c %a "$closed")"
  [ $(( 8#$mode & 8#077 )) -eq 0 ] || fail "run_autograder left $closed at mode $mode (root only expected)"
done

python3 - "$root/results/results.json" "$root/source/build/labs/manifest.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
gpu_labs = [lab["name"] for lab in json.load(open(sys.argv[2]))["labs"] if lab["device"] == "gpu"]
assert gpu_labs, "the manifest lists no GPU lab"
suffix = " (skipped: graded on the cluster)"
for t in r["tests"]:
    lab = t["name"].split(" ")[0]
    if lab not in gpu_labs:
        continue
    assert t["name"] == lab + suffix, t["name"]
    assert t["score"] == 0 and t["max_score"] == 0 and t.get("status") != "passed", t
    assert "graded on the cluster" in t["output"], t["output"]
assert sorted(t["name"].split(" ")[0] for t in r["tests"] if t["name"].endswith(suffix)) == sorted(gpu_labs)
first_line = r["output"].splitlines()[0]
assert first_line.startswith("Your GPU labs (%s) are not graded on Gradescope" % ", ".join(gpu_labs)), first_line
assert "graded on the cluster" in first_line, first_line
print("GPU labs: " + first_line)
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
if [ -n "$build" ]; then
  echo "== package.sh"
  hidden_in="$work/hidden-in"
  mkdir -p "$hidden_in"
  cp "$root/source/hidden/lab01_conv2d.json" "$hidden_in/"
  COURSE_BUILD_DIR="$build" COURSE_BUILD_JOBS="${COURSE_BUILD_JOBS:-2}" \
    bash "$source/grader/gradescope/package.sh" "$work/autograder.zip" "$hidden_in" | tee "$work/package.log"
  unzip -Z1 "$work/autograder.zip" >"$work/zip-list.txt"
  for must in setup.sh run_autograder hidden/lab01_conv2d.json exercises/lab01_conv2d/conv2d.cpp; do
    grep -qx "$must" "$work/zip-list.txt" || fail "the zip lacks $must"
  done
  if grep -E '(^|/)(solutions|planted)/' "$work/zip-list.txt"; then fail "the zip holds solutions/ or planted/ files (above)"; fi
  if grep -qx "COURSE_HAS_CUDA:INTERNAL=ON" "$build/CMakeCache.txt"; then
    for lab in $(python3 -c 'import json,sys; print(*[l["name"] for l in json.load(open(sys.argv[1]))["labs"] if l["device"] == "gpu"])' "$build/labs/manifest.json"); do
      grep -qx "reference_workers/$lab.worker" "$work/zip-list.txt" || fail "the zip lacks the reference worker of $lab"
    done
  else
    if grep -q '^reference_workers/' "$work/zip-list.txt"; then fail "a CPU-only build shipped reference workers"; fi
    grep -q "CPU-only build" "$work/package.log" || fail "package.sh did not say that a CPU-only build ships no reference workers"
  fi
  echo "the zip: $(wc -l <"$work/zip-list.txt") entries, no solutions sources"
fi
echo "PASS: Gradescope setup.sh + run_autograder"
