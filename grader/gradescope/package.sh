#!/usr/bin/env bash
# Makes the zip to upload as a Gradescope programming assignment's autograder:
#
#   grader/gradescope/package.sh OUT.zip [HIDDEN_DIR]
#
# The zip holds the student handout (no solutions/, see `course_grader handout`), the hidden
# cases (HIDDEN_DIR/<lab>.json, copied to hidden/), and setup.sh + run_autograder at its root,
# where Gradescope looks for them.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 OUT.zip [HIDDEN_DIR]" >&2; exit 2; }
out="$(realpath -m "$1")"
hidden="${2:-}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
grader="${COURSE_GRADER:-$repo/build/grader/course_grader}"
[ -x "$grader" ] || { echo "build the grader first: ./course setup (or set COURSE_GRADER)" >&2; exit 2; }
"$grader" handout "$work/course" --source-dir "$repo"
cp "$here/setup.sh" "$here/run_autograder" "$work/course/"
if [ -n "$hidden" ]; then
  mkdir -p "$work/course/hidden"
  cp "$hidden"/*.json "$work/course/hidden/"
fi
rm -f "$out"
(cd "$work/course" && zip -qr "$out" .)
echo "wrote $out (upload it as the autograder; Gradescope runs setup.sh once, run_autograder per submission)"
