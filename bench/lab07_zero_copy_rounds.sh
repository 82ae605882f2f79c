#!/bin/bash
# Lecture 07, sections 15h-15i: the host-mode rungs side by side at 10,000 images, each line a
# separate process (a process's numbers move by about +-0.004 ms), ROUNDS rounds, then rung 23's
# knobs, its trace and a batch sweep, and lab07_latency_floors -- all in one go on one GPU.
#
#   [TRACED="23 23:fetch"] bench/lab07_zero_copy_rounds.sh [BUILD_DIR] [ROUNDS] [VARIANTS]   log to stdout
#
# VARIANTS (default "20 21 23 23:s1 23:static 23:fetch"): a rung number, optionally with rung 23's
# knobs after colons: sN (COURSE_LADDER_ZC_SLOTS=N), static (ORDER=static), fetch (WORK=fetch),
# early|late (START), lstep|lend|lnone (LABELS=step|end|none), bN (BLOCKS=N). Needs BUILD_DIR/bench/lab07_ladder and lab07_latency_floors and the datasets.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
ROUNDS=${2:-3}
VARIANTS=${3:-"20 21 23 23:s1 23:static 23:fetch"}
LADDER=$BUILD/bench/lab07_ladder

# run LABEL VERSION [ENV=VALUE...] -- LADDER ARGS: one process, its timing lines only.
run() {
  local label=$1 version=$2
  shift 2
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  echo "-- $label"
  env "${envs[@]}" "$LADDER" --version "$version" "$@" 2>&1 |
    grep -E '^  (host|device) +batch|rung 2[13]:|trace|FAILED|WRONG|problems|skipped'
}

# variant_env 23:s1:static -> COURSE_LADDER_ZC_SLOTS=1 COURSE_LADDER_ZC_ORDER=static
variant_env() {
  local part
  IFS=: read -ra parts <<<"$1"
  for part in "${parts[@]:1}"; do
    case $part in
      static) echo "COURSE_LADDER_ZC_ORDER=static" ;;
      fetch) echo "COURSE_LADDER_ZC_WORK=fetch" ;;
      early | late) echo "COURSE_LADDER_ZC_START=$part" ;;
      lstep | lend | lnone) echo "COURSE_LADDER_ZC_LABELS=${part#l}" ;;
      s[0-9]*) echo "COURSE_LADDER_ZC_SLOTS=${part#s}" ;;
      b[0-9]*) echo "COURSE_LADDER_ZC_BLOCKS=${part#b}" ;;
    esac
  done
}

echo "== checked: rungs 20, 21, 23 at 1, 7, 37, 10000 images, device and host mode"
"$LADDER" --version 20,21,23 --batch 1,7,37,10000 --mode device,host 2>&1 | grep -vE '^\|'
for ((r = 1; r <= ROUNDS; ++r)); do
  echo "== round $r: 10,000 images, host mode, each a process"
  for v in $VARIANTS; do
    # shellcheck disable=SC2046
    run "$v" "${v%%:*}" $(variant_env "$v") -- --no-check --batch 10000 --mode host
  done
done
echo "== rung 23 traced (%globaltimer stamps; they cost a copy per call), TRACED at 10,000 images, then 1"
for v in ${TRACED:-23}; do
  # shellcheck disable=SC2046
  run "$v trace" 23 COURSE_LADDER_ZC_TRACE=1 $(variant_env "$v") -- --no-check --batch 10000 --mode host
done
run "23 trace" 23 COURSE_LADDER_ZC_TRACE=1 -- --no-check --batch 1 --mode host
echo "== batch sweeps, host mode"
run "21 sweep" 21 -- --no-check --batch 1,100,1000,2500,5000,7500,10000 --mode host
run "23 sweep" 23 -- --no-check --batch 1,100,1000,2500,5000,7500,10000 --mode host
echo "== floors"
"$BUILD/bench/lab07_latency_floors" 2>&1 | sed -n '/host to device/,$p'
