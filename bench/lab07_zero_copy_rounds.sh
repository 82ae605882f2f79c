#!/bin/bash
# Lecture 07, sections 15h-15i: the host-mode rungs side by side at 10,000 images, each line a
# separate process (a process's numbers move by about +-0.004 ms), then rung 23's knobs, traces
# and batch sweeps, and lab07_latency_floors -- all in one go on one GPU.
#
#   bench/lab07_zero_copy_rounds.sh [BUILD_DIR] [ROUNDS] [VARIANTS] [EXTRA]    prints a log to stdout
#
# VARIANTS (ROUNDS rounds; default "20 21 23") and EXTRA (one round after them): a rung number,
# for rung 23 optionally followed by knobs after colons: sN (COURSE_LADDER_ZC_SLOTS=N), static |
# blocked (ORDER), fetch (WORK=fetch), early | late (START), lstep | lend | lnone (LABELS), bulk
# (FETCH=bulk), c2s (CONV2=shared), bN (BLOCKS=N). Environment: CHECKED (rung 23 variants checked
# at 1, 7, 37 and 10,000 images in both modes; default "23"), TRACED (traced at 10,000 and 1,000
# images; default "23"), SWEPT (host-mode batch sweeps; default "21 23"), NCU (variants whose
# host-mode kernel Nsight Compute reads at 1,000 images: duration and sysmem traffic; default none).
# Needs BUILD_DIR/bench/lab07_ladder and lab07_latency_floors and the datasets.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
ROUNDS=${2:-3}
VARIANTS=${3:-"20 21 23"}
EXTRA=${4:-}
LADDER=$BUILD/bench/lab07_ladder

# variant_env 23:s1:static -> COURSE_LADDER_ZC_SLOTS=1 COURSE_LADDER_ZC_ORDER=static
variant_env() {
  local part
  IFS=: read -ra parts <<<"$1"
  for part in "${parts[@]:1}"; do
    case $part in
      static | blocked) echo "COURSE_LADDER_ZC_ORDER=$part" ;;
      fetch) echo "COURSE_LADDER_ZC_WORK=fetch" ;;
      early | late) echo "COURSE_LADDER_ZC_START=$part" ;;
      lstep | lend | lnone) echo "COURSE_LADDER_ZC_LABELS=${part#l}" ;;
      bulk) echo "COURSE_LADDER_ZC_FETCH=bulk" ;;
      c2s) echo "COURSE_LADDER_ZC_CONV2=shared" ;;
      s[0-9]*) echo "COURSE_LADDER_ZC_SLOTS=${part#s}" ;;
      b[0-9]*) echo "COURSE_LADDER_ZC_BLOCKS=${part#b}" ;;
    esac
  done
}

# run VARIANT [LADDER ARGS...]: one process, its timing lines only.
run() {
  local v=$1
  shift
  echo "-- $v"
  # shellcheck disable=SC2046
  env $(variant_env "$v") "$LADDER" --version "${v%%:*}" "$@" 2>&1 |
    grep -E '^  (host|device) +batch|^  (MNIST|Fashion)|rung 2[13]:|trace|FAILED|WRONG|problems|skipped'
}

for v in ${CHECKED:-23}; do
  echo "== checked: $v at 1, 7, 37, 10000 images, device and host mode"
  run "$v" --batch 1,7,37,10000 --mode device,host
done
for ((r = 1; r <= ROUNDS; ++r)); do
  echo "== round $r: 10,000 images, host mode, each a process"
  for v in $VARIANTS; do run "$v" --no-check --batch 10000 --mode host; done
done
if [[ -n $EXTRA ]]; then
  echo "== one round more: 10,000 images, host mode, each a process"
  for v in $EXTRA; do run "$v" --no-check --batch 10000 --mode host; done
fi
echo "== rung 23 traced (%globaltimer stamps; they cost a copy per call)"
for v in ${TRACED:-23}; do
  for b in 10000 1000; do
    COURSE_LADDER_ZC_TRACE=1 run "$v" --no-check --batch $b --mode host
  done
done
echo "== batch sweeps, host mode"
for v in ${SWEPT:-21 23}; do run "$v" --no-check --batch 1,100,1000,2500,5000,7500,10000 --mode host; done
if [[ -n ${NCU:-} ]]; then
  echo "== Nsight Compute: the host-mode kernel at 1,000 images (second call), sysmem traffic"
  metrics=gpu__time_duration.sum,lts__t_sectors_aperture_sysmem_op_read.sum,lts__t_requests_aperture_sysmem_op_read.sum
  for v in $NCU; do
    echo "-- $v"
    # shellcheck disable=SC2046
    env $(variant_env "$v") ncu --clock-control none --kernel-name-base mangled -k 'regex:PrefetchBlock|zero_copy_dynamic' \
      --launch-skip 1 --launch-count 1 --metrics "$metrics" \
      "$LADDER" --no-check --version "${v%%:*}" --batch 1000 --mode host --repetitions 3 2>&1 |
      grep -E 'duration|sectors|requests|==ERR|error' | sed 's/^ */  /'
  done
fi
echo "== floors"
"$BUILD/bench/lab07_latency_floors" 2>&1 | sed -n '/host to device/,$p'
