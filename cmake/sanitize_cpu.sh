#!/usr/bin/env bash
# CTest sanitize.cpu: configures a COURSE_SANITIZE=ON build (ASan + UBSan) under the main build
# tree with the solutions only, builds common_tests and the CPU labs' programs there, and runs
# common.unit and the CPU labs' solution tests in it. Any sanitizer report fails the test.
#
#   sanitize_cpu.sh SOURCE_DIR SANITIZE_BUILD_DIR [extra cmake -D arguments...]
#
# The labs are found through CTest itself (tests labelled "cpu" named solutions.<lab>), and each
# lab's programs are the build targets named <lab>__*, so the script follows whatever
# course_add_lab() creates instead of knowing program paths.
set -uo pipefail
src="$1" dir="$2"
shift 2
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
fail() { echo "FAILED: $*"; exit 1; }

mkdir -p "$dir"
if [ ! -f "$dir/CMakeCache.txt" ]; then
  echo "configuring $dir (COURSE_SANITIZE=ON, solutions only)"
  # Debug without NDEBUG: Tensor::at checks its indices too. -O0 for the tests, the runner and
  # doctest: under ASan + UBSan they compile in about 60% of -O1's time (lab_main.cpp, the lab tests:
  # most of this build), and -O0 instruments every access. -O1 for the code that runs in the workers
  # (COURSE_SANITIZE_WORKER_OPTIMIZATION): it compiles in about half the time of -O3 and still runs
  # lab 04's LeNet over the MNIST split in seconds, far from the 30 s per-call limit. -g1 keeps line
  # numbers.
  cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1" \
    -DCOURSE_SANITIZE_WORKER_OPTIMIZATION=-O1 -DCOURSE_SANITIZE=ON \
    "-DCOURSE_VARIANTS=solutions=$src/solutions" "$@" > "$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log"; fail "configure"; }
fi
cmake "$dir" > /dev/null || fail "re-configure"

labs=$(ctest --test-dir "$dir" -N -L cpu -R '^solutions\.' | sed -n 's/^ *Test *#[0-9]*: solutions\.\([A-Za-z0-9_]*\)$/\1/p')
[ -n "$labs" ] || fail "no CPU solution tests registered in $dir"
all_targets=$(cmake --build "$dir" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')
targets=(common_tests)
for lab in $labs; do
  for t in $(grep "^${lab}__" <<< "$all_targets"); do targets+=("$t"); done
done
echo "building with sanitizers: ${targets[*]}"
args=()
for t in "${targets[@]}"; do args+=(--target "$t"); done
cmake --build "$dir" -j "$jobs" "${args[@]}" > "$dir/build.log" 2>&1 || { tail -n 80 "$dir/build.log"; fail "build"; }

# Leaks count as findings too. (Tests that need std::bad_alloc from an impossible allocation skip
# that check under ASan: its operator new aborts instead of throwing, whatever the options.)
export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
regex="^common\.unit\$"
for lab in $labs; do regex="$regex|^solutions\.$lab\$"; done
ctest --test-dir "$dir" --output-on-failure -R "$regex" -j "$jobs" || fail "a test failed under the sanitizers"
