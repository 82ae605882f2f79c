#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (an Ubuntu image without
# a GPU). It installs what the course needs, builds the grader, and builds the tests of every lab
# it grades (the CPU labs; the GPU labs too with COURSE_GRADESCOPE_GPU=1) once against the
# untouched skeleton, so that grading a submission later compiles only the student's own files (a
# few seconds per lab instead of minutes).
#
# Gradescope's layout, under $AUTOGRADER_ROOT (default /autograder):
#   source/       the unzipped autograder package (grader/gradescope/package.sh makes it): the
#                 course handout, plus hidden/ with the instructor's hidden cases, plus
#                 reference_workers/ (the reference solution's workers of the GPU labs, when the
#                 package was made in a CUDA build), plus this script and run_autograder at its root
#   submission/   the student's upload (run_autograder)
#   results/      results.json (run_autograder)
#
# COURSE_SKIP_PACKAGES=1 skips the package installation (a machine that has everything already,
# such as the course's own test of these scripts).
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
BUILD="$SOURCE/build"
STAGE="$ROOT/staged/submission"
JOBS="${COURSE_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}"

install_packages() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends \
    ca-certificates wget cmake make g++ python3 doctest-dev nlohmann-json3-dev zlib1g-dev nodejs npm
  # Fashion-MNIST is a Debian package; on Ubuntu images it may be missing (only lab 04's
  # Fashion-MNIST check needs it).
  apt-get install -y -qq --no-install-recommends dataset-fashion-mnist || true
  if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    # The build needs the CUDA compiler and runtime even where no GPU runs the GPU labs (they are
    # reported as skipped). NVIDIA's repository has current toolkits for Ubuntu.
    . /etc/os-release
    local repo="${ID}${VERSION_ID//./}"
    wget -q "https://developer.download.nvidia.com/compute/cuda/repos/${repo}/x86_64/cuda-keyring_1.1-1_all.deb" \
      -O /tmp/cuda-keyring.deb
    dpkg -i /tmp/cuda-keyring.deb
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends cuda-nvcc-13-0 cuda-cudart-dev-13-0 libcublas-dev-13-0
  fi
}

if [ "${COURSE_SKIP_PACKAGES:-0}" != 1 ]; then install_packages; fi

echo "setup: data"
"$SOURCE/data/fetch.sh"

echo "setup: configuring and building the grader"
cmake -S "$SOURCE" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
# course_sandbox too: run_autograder asks it which sandbox mode this machine gives.
cmake --build "$BUILD" --target course_grader course_sandbox --parallel "$JOBS" >/dev/null

echo "setup: building the lab tests once against the skeleton"
rm -rf "$STAGE"
mkdir -p "$(dirname "$STAGE")"
# cp -p keeps the skeleton's timestamps: files the student does not change are not recompiled.
cp -rp "$SOURCE/exercises" "$STAGE"
# The GPU labs only where run_autograder grades them (an image with a GPU, COURSE_GRADESCOPE_GPU=1,
# set for setup.sh too): elsewhere it reports them "graded on the cluster" without building them,
# so compiling their CUDA here would only make the image minutes slower to build.
gpu=(--gpu-elsewhere "not built: graded elsewhere")
[ "${COURSE_GRADESCOPE_GPU:-0}" != 1 ] || gpu=()
"$BUILD/grader/course_grader" grade --build-only --submission "$STAGE" "${gpu[@]}" \
  --source-dir "$SOURCE" --build-dir "$BUILD" --jobs "$JOBS" || true
# The reference workers go where the grader looks for them (<build>/labs/solutions/<lab>.worker),
# readable by root only: the test programs (root) open them and hand them to the sandbox through a
# descriptor; the student's uid must not be able to read or run them.
if [ -d "$SOURCE/reference_workers" ]; then
  mkdir -p "$BUILD/labs/solutions"
  for worker in "$SOURCE/reference_workers"/*.worker; do
    [ -e "$worker" ] || continue
    mv -f "$worker" "$BUILD/labs/solutions/"
    echo "setup: reference worker $(basename "$worker") installed"
  done
  rm -rf "$SOURCE/reference_workers"
  [ "$(id -u)" != 0 ] || chown -R root:root "$BUILD/labs/solutions"
  chmod 0700 "$BUILD/labs/solutions"
  chmod 0700 "$BUILD/labs/solutions"/*.worker 2>/dev/null || true
fi
# The hidden cases: root only from the start (run_autograder checks again before every grading).
[ ! -d "$SOURCE/hidden" ] || chmod -R go-rwx "$SOURCE/hidden"
echo "setup: done"
