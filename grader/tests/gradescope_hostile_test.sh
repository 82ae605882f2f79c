#!/usr/bin/env bash
# grader.gradescope_hostile: a student's upload attacks the autograder the way Gradescope runs it
# -- as root, in a container without user namespaces, so the grader's sandbox is mode `user` (a
# dedicated unprivileged uid) -- in the /autograder layout grader.gradescope set up.
#   gradescope_hostile_test.sh SOURCE_DIR WORK_DIR
# The upload (grader/tests/gradescope_hostile/):
#   lab01 conv2d.cpp   at run time, in the worker, reads the hidden cases, results/, the data, the
#                      course/build trees, the reference workers, the staged and raw upload,
#                      Gradescope's metadata, and overwrites results/results.json; it passes only
#                      if one of those worked, else throws what it saw
#   lab02              .incbin of the hidden cases: the assembler runs in the fence, as that uid
#   lab03              #include of the hidden cases: refused by the build guard before compiling
# First, with COURSE_SANDBOX=none (as if no isolation could be set up), run_autograder must refuse
# to grade at all. Asserts each lab failed for the right reason ("Permission denied" for every path, no leak, a
# control read of /etc/passwd that worked), and that results.json is the grader's own.
# Needs root (user mode is root's); exits 77 (skipped) otherwise.
set -euo pipefail
source="$1" work="$2"
root="$work/autograder"
fail() { echo "FAIL: $*" >&2; exit 1; }
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: the grader's sandbox mode 'user' (Gradescope: root without namespaces) needs root; run as root to test it"
  exit 77
fi
[ -x "$root/source/build/grader/course_grader" ] && [ -f "$root/source/run_autograder" ] ||
  fail "run grader.gradescope first (it sets up $root)"
[ -f "$root/source/hidden/lab01_conv2d.json" ] || fail "no hidden case in $root/source/hidden (grader.gradescope puts one there)"
unset COURSE_GRADESCOPE_GPU COURSE_GPU_ELSEWHERE
export COURSE_SANDBOX=user

# Gradescope's own file next to the upload (names, emails, earlier scores).
echo '{"users": [{"name": "Student", "email": "student@example.edu"}]}' >"$root/submission_metadata.json"
rm -rf "$root/submission" "$root/results"
mkdir -p "$root/submission" "$root/results"
# A stand-in results.json left world-readable, as if from before: run_autograder must close it.
echo '{"score": 0, "tests": []}' >"$root/results/results.json"
chmod 0755 "$root" "$root/results"
chmod 0644 "$root/results/results.json"
sed "s|@ROOT@|$root|g" "$source/grader/tests/gradescope_hostile/conv2d.cpp.in" >"$root/submission/conv2d.cpp"
hidden_file="$root/source/hidden/lab01_conv2d.json"
incbin() { echo "asm(\".incbin \\\"$1\\\"\");"; }
# The control: the same line compiles when the file is readable (so "does not compile" below
# means the fence held, not that the line is wrong).
incbin /etc/passwd | c++ -x c++ -c - -o /dev/null || fail "the .incbin line does not compile even for /etc/passwd"
{ incbin "$hidden_file"; cat "$root/source/exercises/lab02_padding_stride/conv2d_general.cpp"; } \
  >"$root/submission/conv2d_general.cpp"
{ echo "#include \"$hidden_file\""; cat "$root/source/exercises/lab03_pooling_activations/pooling.cpp"; } \
  >"$root/submission/pooling.cpp"

echo "== run_autograder where the sandbox cannot isolate (COURSE_SANDBOX=none): it must refuse"
COURSE_SANDBOX=none AUTOGRADER_ROOT="$root" bash "$root/source/run_autograder" >"$work/none-grade.txt" 2>&1
grep -q "cannot isolate student code" "$root/results/results.json" ||
  { cat "$work/none-grade.txt"; fail "run_autograder graded in sandbox mode none: $(cat "$root/results/results.json")"; }

echo "== run_autograder on a hostile upload (labs 01-03)"
start=$(date +%s)
AUTOGRADER_ROOT="$root" bash "$root/source/run_autograder" lab01_conv2d lab02_padding_stride lab03_pooling_activations |
  tee "$work/hostile-grade.txt"
echo "run_autograder took $(( $(date +%s) - start )) s"
grep -q "^sandbox: user:" "$work/hostile-grade.txt" || fail "the grading did not run in sandbox mode user (above)"

python3 - "$root/results/results.json" "$root" <<'PY'
import json, sys
path, root = sys.argv[1], sys.argv[2]
r = json.load(open(path))
assert r.get("score") != 1000 and "written by the student" not in json.dumps(r), "the student wrote results.json"
by_lab = {t["name"].split(" ")[0]: t for t in r["tests"]}
assert set(by_lab) == {"lab01_conv2d", "lab02_padding_stride", "lab03_pooling_activations"}, sorted(by_lab)
assert r["score"] == 0, r["score"]

# lab01: the worker saw "Permission denied" for every path and read or wrote nothing.
out = by_lab["lab01_conv2d"]["output"]
assert by_lab["lab01_conv2d"]["status"] == "failed", out
assert "LEAKED" not in out, "the student's code reached a protected path:\n" + out
assert "the sandbox held:" in out, "the hostile probe did not run as expected:\n" + out
assert "[control /etc/passwd: readable]" in out, "the probe's control read failed, it proves nothing:\n" + out
probed = ["/source/hidden/lab01_conv2d.json", "/source/hidden", "/results", "/results/results.json",
          "/source/data/generated/mnist/test-labels-idx1-ubyte", "/source/grader/reference/lab01_reference.hpp",
          "/source/solutions", "/source/build/labs/solutions", "/source/build/labs/solutions/lab05_cudnn.worker",
          "/source/build", "/staged/submission", "/submission", "/submission_metadata.json", ""]
for p in probed:
    assert "[%s%s: Permission denied]" % (root, p) in out, "no 'Permission denied' for %s%s:\n%s" % (root, p, out)
assert "[write %s/results/results.json: Permission denied]" % root in out, out

# lab02: the assembler could not read the hidden cases. (Its message names its temporary .s file,
# not the student's, and official grading shows no compiler output; that the same file compiles
# when the path is readable is what makes "does not compile" mean the fence held.)
out = by_lab["lab02_padding_stride"]["output"]
assert by_lab["lab02_padding_stride"]["status"] == "failed", out
assert out.startswith("Failed: does not compile"), out
assert "instructor case" not in out, out

# lab03: the build guard refused the #include by its line.
out = by_lab["lab03_pooling_activations"]["output"]
assert by_lab["lab03_pooling_activations"]["status"] == "failed", out
assert "course-guard:" in out and "pooling.cpp:1" in out, out
print("lab01: every path refused (Permission denied), the write too; lab02: .incbin does not compile; "
      "lab03: #include refused; results.json is the grader's")
PY
for closed in "$root" "$root/results" "$root/submission" "$root/submission_metadata.json"; do
  mode="$(stat -c %a "$closed")"
  [ $(( 8#$mode & 8#077 )) -eq 0 ] || fail "run_autograder left $closed at mode $mode (root only expected)"
done
echo "PASS: the student's uid reaches nothing of the autograder's"
