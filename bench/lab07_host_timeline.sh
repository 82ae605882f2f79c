#!/bin/bash
# Lecture 07's host timeline (section 15g, lectures/figures/07-host-timeline.svg), from rung 20's
# own CUDA events (COURSE_LADDER_TIMELINE): rung 14's pipeline (rung 20's copies path with rung
# 14's split and label downloads) and rung 20's default path, 10,000 images each, then the plot.
#
#   bench/lab07_host_timeline.sh [BUILD_DIR] [CSV] [plot options]
#       (defaults: build, bench/results/lab07_host_timeline.csv; the figure: lectures/figures/07-host-timeline.svg)
#
# The CSV is replaced, not appended to. Needs build/bench/lab07_ladder and the datasets (as lab07_ladder).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
CSV=${2:-$ROOT/bench/results/lab07_host_timeline.csv}
shift $(( $# < 2 ? $# : 2 ))
LADDER=$BUILD/bench/lab07_ladder
rm -f "$CSV"
# Rung 14's pipeline, rebuilt by rung 20's knobs: 6 equal chunks, one compute stream, labels copied back.
COURSE_LADDER_TIMELINE=$CSV COURSE_LADDER_CHUNKS=6 COURSE_LADDER_COMPUTE_STREAMS=1 COURSE_LADDER_LABELS=copy \
  "$LADDER" --no-check --version 20 --batch 10000 --mode host --repetitions 9
# Rung 20 as it is.
COURSE_LADDER_TIMELINE=$CSV "$LADDER" --no-check --version 20 --batch 10000 --mode host --repetitions 9
python3 "$ROOT/bench/plot_host_timeline.py" --csv "$CSV" "$@"
