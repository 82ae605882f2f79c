#!/usr/bin/env bash
# CTest common.fuzz_smoke: configures and builds the libFuzzer targets (common/fuzz/) in a
# build folder of their own under the main build tree, then runs each one briefly from the seed
# corpus. Fails on any finding (crash, sanitizer report, uncaught non-course::Error exception,
# leak, time-out); exits 77 (CTest: skipped) where clang or its libFuzzer runtime is missing.
#
#   fuzz_smoke.sh SOURCE_DIR FUZZ_BUILD_DIR SECONDS_PER_TARGET [extra cmake -D arguments...]
set -uo pipefail
src="$1" dir="$2" seconds="$3"
shift 3
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
targets=(fuzz_idx fuzz_idx_gzip fuzz_safetensors)
declare -A seeds=([fuzz_idx]=idx [fuzz_idx_gzip]=idx [fuzz_safetensors]=safetensors)

skip() { echo "SKIPPED: $*"; echo "  (Debian: apt-get install clang libclang-rt-14-dev; ./course test installs them)"; exit 77; }
command -v clang >/dev/null && command -v clang++ >/dev/null || skip "clang is not installed"
mkdir -p "$dir"
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' > "$dir/probe.cpp"
clang++ -fsanitize=fuzzer,address,undefined "$dir/probe.cpp" -o "$dir/probe" 2> "$dir/probe.log" ||
  skip "clang cannot build a libFuzzer program (the compiler-rt runtime is missing): $(head -c 300 "$dir/probe.log")"

if [ ! -f "$dir/CMakeCache.txt" ]; then
  echo "configuring $dir (clang, COURSE_FUZZ=ON)"
  CC=clang CXX=clang++ cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCOURSE_FUZZ=ON "$@" > "$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log"; echo "FAILED: configure"; exit 1; }
fi
args=()
for t in "${targets[@]}"; do args+=(--target "$t"); done
cmake --build "$dir" -j "$jobs" "${args[@]}" > "$dir/build.log" 2>&1 || { cat "$dir/build.log"; echo "FAILED: build"; exit 1; }

status=0
for t in "${targets[@]}"; do
  exe=$(find "$dir" -type f -name "$t" -perm -u+x | head -n 1)
  corpus="$dir/corpus/$t"   # grows from run to run; the committed seeds are only read
  mkdir -p "$corpus" "$dir/findings"
  "$exe" "$corpus" "$src/common/fuzz/corpus/${seeds[$t]}" -dict="$src/common/fuzz/${seeds[$t]}.dict" \
    -max_total_time="$seconds" -runs=100000000 \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/findings/$t-" > "$dir/$t.log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/$t.log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$dir/$t.log" | tail -n 1)
  if [ $rc -eq 0 ]; then
    echo "ok: $t, ${runs:-?} runs in ${seconds} s, $cov"
  else
    status=1
    tail -n 60 "$dir/$t.log"
    echo "FAILED: $t found a bug (exit $rc); reproduce with: $exe $dir/findings/$t-*"
  fi
done
exit $status
