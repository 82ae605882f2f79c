#!/bin/bash
# Lecture 07's host timeline (section 15g, lectures/figures/07-host-timeline.svg), from rung 20's
# own CUDA events (COURSE_LADDER_TIMELINE): rung 14's pipeline (rung 20's copies path with rung
# 14's split and label downloads) and rung 20's default path, 10,000 images each, then the plot.
#
#   bench/lab07_host_timeline.sh [BUILD_DIR] [CSV] [plot options]    run both pipelines, then draw
#       (defaults: build, bench/results/lab07_host_timeline.csv; the figure: lectures/figures/07-host-timeline.svg)
#   bench/lab07_host_timeline.sh --redraw [CSV] [plot options]       draw only, from an existing CSV
#       (default: the committed run, bench/results/lab07_host_timeline_h100_80gb_hbm3.csv; this
#       redraws the committed figure byte for byte)
#
# The figure has exactly two panels, in this order: rung 14's pipeline (copies/6x1/s1) and rung 20
# (mapped_labels/8x1/s2); other pipelines in the CSV (the committed one holds two 3-stream
# variants) are left out. The CSV is replaced, not appended to. Running needs
# BUILD_DIR/bench/lab07_ladder and the datasets (as lab07_ladder).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PANELS=(--pipeline copies/6x1/s1 --pipeline mapped_labels/8x1/s2)
if [[ ${1:-} == --redraw ]]; then
  CSV=${2:-$ROOT/bench/results/lab07_host_timeline_h100_80gb_hbm3.csv}
  shift $(( $# < 2 ? $# : 2 ))
  exec python3 "$ROOT/bench/plot_host_timeline.py" --csv "$CSV" "${PANELS[@]}" "$@"
fi
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
python3 "$ROOT/bench/plot_host_timeline.py" --csv "$CSV" "${PANELS[@]}" "$@"
