#!/usr/bin/env bash
# Produces the outputs of chapter 4a (lectures/04a-cuda-toolchain.md) that need a GPU or the CUDA
# tools a GPU machine has (compute-sanitizer, ncu, cuobjdump, nvdisasm), one file per output:
#
#   OUT=/tmp/toolchain-out bash lectures/tools/toolchain_gpu_outputs.sh
#
# Run it from the repository root on a machine with an sm_90 GPU (H100/H200) and CUDA 13.0. It
# builds only two small programs with nvcc (no CMake, no data files): the demo program
# lectures/tools/toolchain_demo.cu linked with the course's lab 06 and lab 07 solution kernels,
# once with -lineinfo and once with -G. About a minute on an H100 machine with 16 cores.
# The chapter marks where each file goes with <!-- GPU-OUTPUT: name --> (name = file name
# without .txt). Nsight Systems is not used: it is not installed on the course's GPU machine.
set -uo pipefail

: "${OUT:?set OUT to the folder the outputs go to}"
mkdir -p "$OUT"
[[ -f lectures/04a-cuda-toolchain.md ]] || { echo "run this from the repository root" >&2; exit 2; }

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
tool() { command -v "$1" 2>/dev/null || echo "$CUDA_HOME/bin/$1"; }
NVCC=$(tool nvcc)
SANITIZER=$(tool compute-sanitizer)
NCU=$(tool ncu)
CUOBJDUMP=$(tool cuobjdump)
NVDISASM=$(tool nvdisasm)

WORK=$(mktemp -d /tmp/toolchain_gpu_outputs.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
L6=solutions/lab06_naive_cuda
L7=solutions/lab07_optimized_cuda
INCLUDES=(-I common/include -I "$L7" -I "$L7/ladder")
FLAGS=(-arch=sm_90 -std=c++17 "${INCLUDES[@]}")
SOURCES=(lectures/tools/toolchain_demo.cu "$L6/conv2d.cu" "$L6/layers.cu" "$L7/kernels.cu")

# Runs "$@", writes the command line and its output (stdout and stderr) to $OUT/$name.txt.
capture() {
  local name=$1
  shift
  { echo "\$ $*"; timeout 150 "$@" 2>&1; echo "(exit status $?)"; } >"$OUT/$name.txt"
  echo "wrote $OUT/$name.txt"
}

# ---- build (in parallel) ---------------------------------------------------------------------
start=$SECONDS
"$NVCC" "${FLAGS[@]}" -lineinfo "${SOURCES[@]}" -o "$WORK/toolchain_demo" &
"$NVCC" "${FLAGS[@]}" -G "${SOURCES[@]}" -o "$WORK/toolchain_demo_G" &
"$NVCC" "${FLAGS[@]}" -lineinfo -c "$L6/layers.cu" -o "$WORK/layers.o" &
"$NVCC" "${FLAGS[@]}" -lineinfo -cubin "$L6/layers.cu" -o "$WORK/layers.cubin" &
"$NVCC" "${FLAGS[@]}" -c "$L6/conv2d.cu" -o "$WORK/conv2d.o" &
"$NVCC" "${FLAGS[@]}" -lineinfo -c "$L6/conv2d.cu" -o "$WORK/conv2d_lineinfo.o" &
"$NVCC" "${FLAGS[@]}" -c "$L7/kernels.cu" -o "$WORK/kernels.o" &
"$NVCC" "${FLAGS[@]}" -c "$L7/ladder/04_constant_weights.cu" -o "$WORK/rung04.o" &
"$NVCC" "${FLAGS[@]}" -c "$L7/ladder/12_tensor_cores.cu" -o "$WORK/rung12.o" &
"$NVCC" -arch=sm_90 -cubin lectures/tools/softmax_demo.cu -o "$WORK/softmax.cubin" &
"$NVCC" -arch=sm_90 -cubin --use_fast_math lectures/tools/softmax_demo.cu -o "$WORK/softmax_fast.cubin" &
wait
echo "built in $((SECONDS - start)) s"
[[ -x "$WORK/toolchain_demo" && -x "$WORK/toolchain_demo_G" ]] || { echo "build failed" >&2; exit 1; }
DEMO=$WORK/toolchain_demo

{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv 2>&1
  "$NVCC" --version | tail -2
  "$SANITIZER" --version 2>&1 | head -3
  "$NCU" --version 2>&1 | tail -1
} >"$OUT/versions.txt"

# ---- machine code: cuobjdump and nvdisasm (no GPU needed, but these tools are not on every machine)
RELU=_ZN5lab0611relu_kernelEPfi
capture sass_relu "$CUOBJDUMP" -sass -fun "$RELU" "$WORK/layers.o"
capture ptx_relu "$CUOBJDUMP" -ptx "$WORK/layers.o"
# nvdisasm works on a cubin; -g prints the source line (-lineinfo) before the instructions.
"$NVDISASM" -g -c "$WORK/layers.cubin" >"$OUT/nvdisasm_layers_full.txt" 2>&1
{ echo "\$ nvdisasm -g -c layers.cubin   (the relu_kernel section)";
  awk -v k="$RELU" 'index($0, ".text." k) && /section/ {f=1} f && /section/ && !index($0, k) {f=0} f' \
    "$OUT/nvdisasm_layers_full.txt" | head -80; } >"$OUT/nvdisasm_relu.txt"
capture resource_usage "$CUOBJDUMP" --dump-resource-usage "$WORK/kernels.o"
capture resource_usage_rung04 "$CUOBJDUMP" --dump-resource-usage "$WORK/rung04.o"
# conv2d's inner loop: the SASS of lab 06's convolution kernel
capture sass_conv2d "$CUOBJDUMP" -sass "$WORK/conv2d.o"
# -lineinfo must not change the machine code: compare the instructions without the addresses.
{
  strip_sass() { "$CUOBJDUMP" -sass "$1" | grep -E '^\s+/\*[0-9a-f]{4}\*/' | sed -E 's@/\*[0-9a-f]{4}\*/@@; s@/\* 0x[0-9a-f]+ \*/@@'; }
  strip_sass "$WORK/conv2d.o" >"$WORK/a.sass"
  strip_sass "$WORK/conv2d_lineinfo.o" >"$WORK/b.sass"
  echo "conv2d_kernel SASS instructions: $(wc -l <"$WORK/a.sass") without -lineinfo, $(wc -l <"$WORK/b.sass") with"
  if cmp -s "$WORK/a.sass" "$WORK/b.sass"; then echo "identical instructions"; else echo "DIFFERENT:"; diff "$WORK/a.sass" "$WORK/b.sass" | head -20; fi
} >"$OUT/lineinfo_same_code.txt" 2>&1
# Rung 12's spills: where do the local-memory loads and stores (STL/LDL) sit?
{ echo "\$ cuobjdump -sass rung12.o | grep -E 'STL|LDL'   (lenet_tensor_cores<float>)";
  "$CUOBJDUMP" -sass "$WORK/rung12.o" | awk '/Function : .*lenet_tensor_coresIfE/{f=1} /Function : .*lenet_tensor_coresIhE/{f=0} f' \
    | grep -nE 'STL|LDL|BAR\.SYNC|BRA|EXIT' ; } >"$OUT/sass_rung12_spills.txt" 2>&1
# --use_fast_math on the softmax demo: the instruction mix, both ways
{
  for f in softmax softmax_fast; do
    "$CUOBJDUMP" -sass "$WORK/$f.cubin" >"$WORK/$f.sass"
    echo "== $f.cubin: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$WORK/$f.sass") instructions (with NOPs)"
    grep -oE '(MUFU\.[A-Z0-9]+|FFMA[.A-Z]*|FMUL[.A-Z]*|FADD[.A-Z]*|FCHK|CALL\.[A-Z.]+|FSETP[.A-Z]*)' "$WORK/$f.sass" | sort | uniq -c
  done
  echo "== softmax.cubin: the division's slow path"
  grep -nE 'FCHK|CALL|MUFU\.RCP' "$WORK/softmax.sass" | head -8
  echo "== softmax_fast.cubin: exp and division"
  grep -nE 'MUFU|FMUL' "$WORK/softmax_fast.sass" | head -8
} >"$OUT/fast_math_sass.txt" 2>&1
echo "wrote $OUT/lineinfo_same_code.txt, sass_rung12_spills.txt, fast_math_sass.txt"

# ---- -G: the same kernels, timed (never do this for real measurements) ---------------------
{
  echo "-lineinfo build (optimised):"; "$DEMO" conv2; "$DEMO" lenet7
  echo "-G build (device debug, no optimisation):"; "$WORK/toolchain_demo_G" conv2; "$WORK/toolchain_demo_G" lenet7
} >"$OUT/debug_G_timing.txt" 2>&1
echo "wrote $OUT/debug_G_timing.txt"

# ---- compute-sanitizer: the four planted bugs, and a clean run of course kernels -------------
capture memcheck_oob "$SANITIZER" --tool memcheck --print-limit 2 "$DEMO" oob
capture racecheck_race "$SANITIZER" --tool racecheck --print-limit 2 "$DEMO" race
capture initcheck_uninit "$SANITIZER" --tool initcheck --print-limit 2 "$DEMO" uninit
capture synccheck_sync "$SANITIZER" --tool synccheck --print-limit 2 "$DEMO" sync
capture memcheck_clean "$SANITIZER" --tool memcheck --error-exitcode 86 "$DEMO" lenet7 100
capture racecheck_clean "$SANITIZER" --tool racecheck --error-exitcode 86 "$DEMO" lenet7 100

# ---- Nsight Compute on course kernels --------------------------------------------------------
# lab 07's solution kernel: which unit limits it, with what resources, how many warps
capture ncu_lenet7 "$NCU" --clock-control none --kernel-name regex:lenet_kernel --launch-count 1 \
  --section SpeedOfLight --section LaunchStats --section Occupancy "$DEMO" lenet7 10000
# lab 06's convolution: where the warps wait, and (thanks to -lineinfo) on which source lines
capture ncu_conv2d_source "$NCU" --clock-control none --kernel-name regex:conv2d_kernel --launch-count 1 \
  --section WarpStateStats --section SourceCounters "$DEMO" conv2 10000
# The source page: per CUDA source line, with -lineinfo; the same without it (an -O3 build without line table)
"$NVCC" "${FLAGS[@]}" "${SOURCES[@]}" -o "$WORK/toolchain_demo_nolineinfo"
for v in toolchain_demo toolchain_demo_nolineinfo; do
  timeout 150 "$NCU" --clock-control none --kernel-name regex:conv2d_kernel --launch-count 1 --section SourceCounters \
    -f -o "$WORK/$v" "$WORK/$v" conv2 10000 >/dev/null 2>&1
  { echo "\$ ncu --import $v.ncu-rep --page source --csv --print-source cuda"
    timeout 60 "$NCU" --import "$WORK/$v.ncu-rep" --page source --csv --print-source cuda 2>&1 | cut -c1-400 | head -60
  } >"$OUT/ncu_source_page_$v.txt"
done
echo "done in $((SECONDS - start)) s"
