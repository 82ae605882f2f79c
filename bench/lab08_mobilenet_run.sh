#!/usr/bin/env bash
# Lab 08's MobileNetV2 comparison in one command: builds and runs build/bench/lab08_mobilenet (ours,
# the rungs and cuDNN + cuBLAS, each checked against the golden network), then
# bench/torch_mobilenet.py (PyTorch eager and CUDA graph), all rows into one CSV.
#
#   bench/lab08_mobilenet_run.sh BUILD_DIR OUT_PREFIX [lab08_mobilenet options...]
#
# BUILD_DIR: a configured build tree (cmake -S . -B BUILD_DIR -DCMAKE_BUILD_TYPE=Release);
# writes OUT_PREFIX.csv (replaced), OUT_PREFIX.txt (both programs' output) and OUT_PREFIX.logits.bin.
# Run from anywhere; the data sets come from COURSE_FASHION_MNIST_DIR as for the tests.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_PREFIX [lab08_mobilenet options...]" >&2
  exit 2
fi
build=$1 prefix=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
cmake --build "$build" --target lab08_mobilenet
rm -f "$prefix.csv"
set +e
# Which source was measured (the lead re-runs this after merging faster solutions).
git -C "$here/.." log -1 --format='source: commit %h (%cs) %s' > "$prefix.txt" 2>/dev/null || : > "$prefix.txt"
"$build/bench/lab08_mobilenet" --csv "$prefix.csv" --logits "$prefix.logits.bin" "$@" 2>&1 | tee -a "$prefix.txt"
ours=${PIPESTATUS[0]}
python3 "$here/torch_mobilenet.py" --csv "$prefix.csv" --ours "$prefix.logits.bin" 2>&1 | tee -a "$prefix.txt"
torch=${PIPESTATUS[0]}
[ "$ours" -eq 0 ] && [ "$torch" -eq 0 ]
