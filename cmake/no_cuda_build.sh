#!/usr/bin/env bash
# CTest build.no_cuda: the README's promise that labs 01-04 need only a C++ compiler. Configures
# a COURSE_WITH_CUDA=OFF build (solutions only) under the main build tree, builds the grader and
# the CPU labs' programs there, grades every lab with the grader and checks that
#   - nothing in that build is compiled by nvcc or sees the CUDA headers,
#   - labs 01-04 pass,
#   - the GPU labs are reported "not built: no CUDA toolkit" as SKIPPED (0 of 0 points in the
#     Gradescope results, "skipped" in the gradebook), and the grader exits 0.
#
#   no_cuda_build.sh SOURCE_DIR NO_CUDA_BUILD_DIR [extra cmake -D arguments...]
set -uo pipefail
src="$1" dir="$2"
shift 2
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
fail() { echo "FAILED: $*"; exit 1; }

mkdir -p "$dir"
if [ ! -f "$dir/CMakeCache.txt" ]; then
  echo "configuring $dir (COURSE_WITH_CUDA=OFF, solutions only)"
  cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCOURSE_WITH_CUDA=OFF \
    "-DCOURSE_VARIANTS=solutions=$src/solutions" "$@" > "$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log"; fail "configure"; }
fi
cmake "$dir" > "$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; fail "re-configure"; }
grep -q "CPU-only build" "$dir/configure.log" || fail "configure did not say that the build is CPU-only"
grep -q "^COURSE_HAS_CUDA:INTERNAL=OFF" "$dir/CMakeCache.txt" || fail "COURSE_HAS_CUDA is not OFF in $dir"
! grep -q "^CMAKE_CUDA_COMPILER:" "$dir/CMakeCache.txt" || fail "a CPU-only build looked for a CUDA compiler"

# The CPU labs, from CTest (tests labelled "cpu" named solutions.<lab>), as in sanitize_cpu.sh.
labs=$(ctest --test-dir "$dir" -N -L cpu -R '^solutions\.' | sed -n 's/^ *Test *#[0-9]*: solutions\.\([A-Za-z0-9_]*\)$/\1/p')
[ -n "$labs" ] || fail "no CPU solution tests registered in $dir"
args=(--target course_grader)
for lab in $labs; do args+=(--target "${lab}__solutions"); done
echo "building without CUDA: course_grader $(echo $labs | sed 's/\([^ ]*\)/\1__solutions/g')"
cmake --build "$dir" -j "$jobs" "${args[@]}" > "$dir/build.log" 2>&1 || { tail -n 80 "$dir/build.log"; fail "build"; }
if grep -E "nvcc|cuda/include|targets/[^/]*/include" "$dir/compile_commands.json" > /dev/null; then
  fail "a compile command in $dir uses nvcc or the CUDA headers"
fi

# Every lab: the CPU labs must pass, the GPU labs must be skipped as not built (exit 0 = none failed).
out="$dir/grade"
mkdir -p "$out"
NO_COLOR=1 "$dir/grader/course_grader" grade --source-dir "$src" --build-dir "$dir" --solutions -j "$jobs" \
  --json "$out/results.json" --csv "$out/grades.csv" > "$out/grade.log" 2>&1
rc=$?
cat "$out/grade.log"
[ $rc -eq 0 ] || fail "course_grader grade --solutions exited with $rc"
for lab in $labs; do
  grep -Eq "^  $lab +PASSED" "$out/grade.log" || fail "$lab did not pass"
done
gpu_labs=$(python3 -c 'import json,sys; print(" ".join(l["name"] for l in json.load(open(sys.argv[1]))["labs"] if l["device"] == "gpu"))' \
  "$dir/labs/manifest.json") || fail "cannot read $dir/labs/manifest.json"
[ -n "$gpu_labs" ] || fail "the manifest of $dir lists no GPU lab (they must appear as not built)"
for lab in $gpu_labs; do
  grep -Eq "^  $lab +SKIPPED .*not built: no CUDA toolkit" "$out/grade.log" || fail "$lab is not reported as skipped, not built"
done
python3 - "$out/results.json" "$out/grades.csv" $gpu_labs <<'PY' || fail "the reports do not show the GPU labs as skipped"
import csv, json, sys
results, grades, gpu_labs = json.load(open(sys.argv[1])), list(csv.DictReader(open(sys.argv[2]))), sys.argv[3:]
tests = {t["name"].split(" ")[0]: t for t in results["tests"]}
for lab in gpu_labs:
    t = tests[lab]
    assert t["score"] == 0 and t["max_score"] == 0 and "no CUDA toolkit" in t["name"], t
    assert "not built: no CUDA toolkit" in t["output"], t["output"]
    assert grades[0][lab] == "skipped", grades[0]
assert results["score"] == results["max_score"] > 0, (results["score"], results["max_score"])
PY
echo "build.no_cuda: labs $(echo $labs) pass without CUDA; $(echo $gpu_labs) skipped as not built"
