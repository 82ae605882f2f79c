#!/usr/bin/env bash
# Makes the zip to upload as a Gradescope programming assignment's autograder:
#
#   grader/gradescope/package.sh OUT.zip [HIDDEN_DIR]
#
# The zip holds, at its root (where Gradescope looks for setup.sh and run_autograder):
#   - the student handout (no solutions/, see `course_grader handout`);
#   - hidden/: the instructor's hidden cases (HIDDEN_DIR/<lab>.json);
#   - reference_workers/: the reference solution's *worker binaries* of the labs with speed
#     gates (the GPU labs), built in the course's build folder from solutions/. An autograder
#     image with a GPU judges speed against them (setup.sh installs them, root-only); without
#     one they are unused. Binaries only: no solution source ever goes into the zip.
#   - setup.sh and run_autograder.
#
# COURSE_BUILD_DIR: the course's build folder (default <repo>/build); COURSE_GRADER: the grader
# (default <build>/grader/course_grader). The workers are built there when missing
# (`cmake --build <build> --target <lab>__solutions_worker`). The workers are linked against
# the system's C++ and CUDA runtime: build the package on the same distribution as the
# autograder image (Gradescope's base images are Ubuntu) when that image has a GPU.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 OUT.zip [HIDDEN_DIR]" >&2; exit 2; }
out="$(realpath -m "$1")"
hidden="${2:-}"
build="$(realpath -m "${COURSE_BUILD_DIR:-$repo/build}")"
jobs="${COURSE_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}"
command -v zip >/dev/null || { echo "package.sh needs zip (apt-get install zip)" >&2; exit 2; }
if [ -n "$hidden" ] && ! compgen -G "$hidden/*.json" >/dev/null; then
  echo "no hidden cases in $hidden (expected $hidden/<lab>.json)" >&2; exit 2
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
grader="${COURSE_GRADER:-$build/grader/course_grader}"
[ -x "$grader" ] || { echo "build the grader first: ./course setup (or set COURSE_GRADER, COURSE_BUILD_DIR)" >&2; exit 2; }
"$grader" handout "$work/course" --source-dir "$repo"
cp "$here/setup.sh" "$here/run_autograder" "$work/course/"
if [ -n "$hidden" ]; then
  mkdir -p "$work/course/hidden"
  cp "$hidden"/*.json "$work/course/hidden/"
fi

# The labs with speed gates are the GPU labs of the manifest. A CPU-only build (no CUDA toolkit)
# builds none of them, and has no reference worker to ship.
manifest="$build/labs/manifest.json"
[ -f "$manifest" ] || { echo "no lab manifest at $manifest: configure the course's build first (./course setup)" >&2; exit 2; }
mapfile -t gpu_labs < <(python3 -c '
import json, sys
for lab in json.load(open(sys.argv[1]))["labs"]:
    if lab["device"] == "gpu": print(lab["name"])' "$manifest")
if ! grep -qx "COURSE_HAS_CUDA:INTERNAL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
  echo "note: $build is a CPU-only build (no CUDA toolkit): no reference workers shipped. Gradescope" \
       "reports the GPU labs as graded on the cluster either way; an image with a GPU would need them."
elif [ ! -d "$repo/solutions" ]; then
  echo "this checkout has no solutions/ (a handout?): the reference workers cannot be built" >&2; exit 2
else
  mkdir -p "$work/course/reference_workers"
  for lab in "${gpu_labs[@]}"; do
    worker="$build/labs/solutions/$lab.worker"
    # Always ask the build: it rebuilds only when solutions/ changed since the worker was made.
    cmake --build "$build" --target "${lab}__solutions_worker" --parallel "$jobs" >"$work/build.log" 2>&1 || {
      tail -20 "$work/build.log" >&2
      echo "cannot build the reference worker of $lab (target ${lab}__solutions_worker in $build)" >&2; exit 1
    }
    [ -x "$worker" ] || { echo "built ${lab}__solutions_worker but $worker is missing" >&2; exit 1; }
    cp "$worker" "$work/course/reference_workers/"
    echo "shipping the reference worker of $lab ($(du -h "$worker" | cut -f1))"
  done
fi

# What must never be in the zip: a solutions/ folder or any source of one.
if find "$work/course" -type d \( -name solutions -o -name planted \) | grep -q .; then
  echo "refusing to package: the staged autograder holds a solutions/ or planted/ folder" >&2; exit 1
fi

rm -f "$out"
(cd "$work/course" && zip -qr "$out" .)
echo "wrote $out (upload it as the autograder; Gradescope runs setup.sh once, run_autograder per submission)"
