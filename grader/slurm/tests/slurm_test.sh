#!/usr/bin/env bash
# grader.slurm: grade a small class through a real single-node Slurm cluster, end to end.
#
#   slurm_test.sh SOURCE_DIR
#
# Starts munged + slurmctld + slurmd on localhost in a temp folder (tests/local_cluster.sh), makes
# four submissions -- good (solutions/), skeleton (exercises/: "not implemented"), broken (a
# compile error in every graded lab), slow (its lab01 sleeps 20 s on its first call) -- and runs
# `course-slurm submit` (build job, 4-task array, merge job). While the slow student's task runs
# it is cancelled (scancel <array>_<k>); then: status says "missing", the merge lists that student
# NOT GRADED; `course-slurm resubmit` grades it again, and the test checks every verdict, that the
# other tasks' result files are byte-identical to before, that every student kept the seed the
# class plan gives them, and that gradebook.csv, results.json and junit.xml agree.
#
# Exit 0 passed, 1 failed, 77 skipped (no root, no Slurm/munge, a daemon that does not start).
#
# Environment:
#   COURSE_SLURM_COURSE_BUILD  an already configured (and built) course build folder to reuse
#                              (CTest passes its own); else the build job configures and builds
#                              one in the class folder, like an instructor's first run
#   COURSE_SLURM_PREFIX        Slurm + munge unpacked with dpkg -x there (see local_cluster.sh)
#   COURSE_SLURM_GPUS=N        configure N GPUs (gres) and grade with --gres gpu:1
#   COURSE_SLURM_LABS          labs to grade (default lab01; lab01 is always added: the slow
#                              student sleeps there)
#   COURSE_SLURM_WORK_DIR      keep everything there instead of a fresh temp folder (a second
#                              run then reuses the students' builds)
#   COURSE_SLURM_KEEP=1        leave the temp folder (logs, results) after the test
set -euo pipefail
source_dir="$(cd "${1:?usage: slurm_test.sh SOURCE_DIR}" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
course_slurm="$source_dir/grader/slurm/course-slurm"
started=$SECONDS

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { printf '== [%4ss] %s\n' "$((SECONDS - started))" "$*"; }

[ -d "$source_dir/solutions" ] || { echo "SKIP: $source_dir has no solutions/ (a handout): no good submission to grade" >&2; exit 77; }

work="${COURSE_SLURM_WORK_DIR:-}"
if [ -z "$work" ]; then
  work="$(mktemp -d /tmp/course-slurm-test.XXXXXX)"
  [ "${COURSE_SLURM_KEEP:-0}" = 1 ] || cleanup_work="$work"
fi
mkdir -p "$work"
# shellcheck source=local_cluster.sh
source "$here/local_cluster.sh"
on_exit() {
  local status=$?
  cluster_stop
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
    echo "---- logs of the jobs (in $work/class/logs):" >&2
    for f in "$work"/class/logs/*; do [ -f "$f" ] && { echo "-- $f" >&2; tail -n 25 "$f" >&2; }; done
    echo "---- slurmctld/slurmd log tails:" >&2
    tail -n 15 "$work/cluster/log/slurmctld.log" "$work/cluster/log/slurmd.log" >&2 2>/dev/null || true
    cleanup_work=""  # keep it for a look
  fi
  [ -z "${cleanup_work:-}" ] || rm -rf "$cleanup_work"
  exit "$status"
}
trap on_exit EXIT
trap 'exit 1' INT TERM

rm -rf "$work/cluster" "$work/class"
cluster_start "$work/cluster" || exit $?
note "cluster up"

# --- the class ------------------------------------------------------------------------------
gpus="${COURSE_SLURM_GPUS:-0}"
labs="${COURSE_SLURM_LABS:-lab01}"
case ",$labs," in *,lab01,* | *,lab01_conv2d,* | *,1,*) ;; *) labs="lab01,$labs" ;; esac
IFS=, read -r -a lab_list <<<"$labs"

# A fixed folder name: the batch build is <build>/submissions/batch_slurm_test_class, so a reused
# course build keeps one folder for this test, apart from any other batch.
subs="$work/slurm_test_class"
rm -rf "$subs"
mkdir -p "$subs"
# cp -a keeps the files' times: with COURSE_SLURM_WORK_DIR a second run rebuilds only what changed.
cp -a "$source_dir/solutions" "$subs/good"
cp -a "$source_dir/exercises" "$subs/skeleton"
cp -a "$source_dir/solutions" "$subs/broken"
cp -a "$source_dir/solutions" "$subs/slow"
for lab in "${lab_list[@]}"; do
  folder="$(find "$subs/broken" -mindepth 1 -maxdepth 1 -type d \( -name "$lab" -o -name "${lab}_*" -o -name "lab0${lab}_*" \) | head -n 1)"
  [ -n "$folder" ] || fail "no lab folder for '$lab' in solutions/"
  file="$(find "$folder" -maxdepth 1 \( -name '*.cpp' -o -name '*.cu' \) | sort | head -n 1)"
  sed -i '1i int broken_here = ;  // the broken student: a syntax error' "$file"
done
python3 - "$subs/slow/lab01_conv2d/conv2d.cpp" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
anchor = "course::Tensor& output) {\n"
assert anchor in text and "#include <string>\n" in text, "solutions/lab01_conv2d/conv2d.cpp changed: update the slow student"
text = text.replace("#include <string>\n", "#include <string>\n#include <chrono>\n#include <thread>\n", 1)
text = text.replace(anchor, anchor + """  static bool first_call = true;  // the slow student: 20 s on the first call, then correct
  if (first_call) {
    first_call = false;
    std::this_thread::sleep_for(std::chrono::seconds(20));
  }
""", 1)
open(path, "w").write(text)
PY

# --- the plan's names are the grader's names ---------------------------------------------------
# course-slurm computes the students' names itself (tasks are planned before anything is built);
# the grader must know every one of them (--only refuses a name it does not have), awkward
# folder names included: spaces, '-', '+', '.', non-ASCII bytes, duplicates, a link to a folder.
grader="${COURSE_SLURM_COURSE_BUILD:+$COURSE_SLURM_COURSE_BUILD/grader/course_grader}"
if [ -n "$grader" ] && [ -x "$grader" ]; then
  awkward="$work/awkward_names"
  rm -rf "$awkward" "$work/awkward_class"
  mkdir -p "$awkward"/{"al ice",al-ice,al_ice,"a+b",x.y,"é",.hidden}
  touch "$awkward/a_file"
  ln -s al_ice "$awkward/linked"
  "$course_slurm" submit --submissions "$awkward" --class-dir "$work/awkward_class" --dry-run >/dev/null 2>&1 ||
    fail "course-slurm submit --dry-run failed on $awkward"
  expected="a_b al_ice al_ice_2 al_ice_3 linked x_y __"
  [ "$(paste -sd' ' - <"$work/awkward_class/plan/students.txt")" = "$expected" ] ||
    fail "plan/students.txt: $(paste -sd' ' - <"$work/awkward_class/plan/students.txt"), expected $expected"
  only_refuses() {
    local said
    said="$("$grader" grade --submissions "$awkward" --only "$1" --no-build --build-dir "$work/awkward_class" 2>&1)" || true
    [[ "$said" == *"--only: no submission named"* ]]
  }
  only_refuses nobody_by_this_name || fail "the grader's --only no longer says 'no submission named' (update this check)"
  while read -r name; do
    ! only_refuses "$name" || fail "course-slurm plans a student '$name' the grader does not know"
  done <"$work/awkward_class/plan/students.txt"
  note "the plan's student names are the grader's"
fi

# --- submit ---------------------------------------------------------------------------------
class="$work/class"
gres=none
[ "$gpus" -eq 0 ] || gres=gpu:1
build_args=()
[ -z "${COURSE_SLURM_COURSE_BUILD:-}" ] || build_args=(--course-build "$COURSE_SLURM_COURSE_BUILD")
jobs_cpus="$(nproc)"
submit_out="$("$course_slurm" submit --submissions "$subs" --class-dir "$class" --source-dir "$source_dir" \
  --labs "$labs" --per-task 1 --gres "$gres" --timeout 60 --margin 60 --cpus-per-task 1 \
  --build-cpus "$jobs_cpus" --build-time 60 "${build_args[@]}")" || fail "course-slurm submit failed: $submit_out"
echo "$submit_out"
read -r build_id array_id merge_id < <(echo "$submit_out" | sed -n 's/^submitted: build job \([0-9]*\), grading array \([0-9]*\) .*merge job \([0-9]*\)$/\1 \2 \3/p')
[ -n "${merge_id:-}" ] || fail "submit did not print the three job ids"
[ "$(paste -sd, - <"$class/plan/students.txt")" = "broken,good,skeleton,slow" ] ||
  fail "plan/students.txt: $(paste -sd, - <"$class/plan/students.txt")"
slow_task="$(grep -nx slow "$class/plan/tasks.txt" | cut -d: -f1)"
[ "$slow_task" = 4 ] || fail "the slow student should be task 4, the plan says: $(cat "$class/plan/tasks.txt")"

job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }
wait_gone() {  # wait_gone SECONDS ID...: until Slurm lists none of the jobs as pending/running
  local limit=$((SECONDS + $1))
  shift
  local ids
  ids="$(IFS=,; echo "$*")"
  while squeue -h -j "$ids" -o %A 2>/dev/null | grep -q .; do
    [ $SECONDS -lt $limit ] || fail "jobs $ids still queued or running after $((SECONDS - limit + $1))s: $(squeue -h -r -j "$ids" -o '%i %T %r')"
    sleep 1
  done
}

note "waiting for the build job $build_id"
wait_gone "${COURSE_SLURM_BUILD_WAIT:-1500}" "$build_id"
[ "$(job_state "$build_id")" = COMPLETED ] || fail "build job $build_id ended $(job_state "$build_id"): $(tail -n 30 "$class"/logs/build-job-*.out)"
note "build done; waiting for task $slow_task (slow) to run"

limit=$((SECONDS + 600))
until [ "$(squeue -h -r -j "$array_id" -o '%i %T' | awk -v t="${array_id}_$slow_task" '$1 == t {print $2}')" = RUNNING ]; do
  [ $SECONDS -lt $limit ] || fail "task $slow_task never ran: $(squeue -h -r -j "$array_id" -o '%i %T %r')"
  [ ! -f "$class/results/task-$slow_task.json" ] || fail "task $slow_task finished before the test saw it run"
  sleep 0.5
done
sleep 4  # inside its 20 s sleep: the grading has started and cannot have finished
[ ! -f "$class/results/task-$slow_task.json" ] || fail "task $slow_task finished within 4 s (the slow student did not sleep?)"
scancel "${array_id}_$slow_task"
note "cancelled ${array_id}_$slow_task while it ran"
wait_gone 900 "$array_id" "$merge_id"
[ "$(job_state "${array_id}_$slow_task")" = CANCELLED ] || fail "task $slow_task should be CANCELLED, is $(job_state "${array_id}_$slow_task")"
[ "$(job_state "$merge_id")" = COMPLETED ] || fail "merge job $merge_id ended $(job_state "$merge_id")"

# --- status and merge with one task missing --------------------------------------------------
set +e
status_out="$("$course_slurm" status --class-dir "$class")"
status_rc=$?
set -e
echo "$status_out"
[ "$status_rc" -eq 1 ] || fail "status should exit 1 with a task missing, got $status_rc"
echo "$status_out" | grep -Eq "^task $slow_task +missing +slow .*CANCELLED" || fail "status does not show task $slow_task missing (CANCELLED)"
echo "$status_out" | grep -q "^3 of 4 tasks done; missing: $slow_task$" || fail "status summary line is wrong"
"$course_slurm" merge --class-dir "$class" >"$work/merge-by-hand.txt" 2>&1 || { cat "$work/merge-by-hand.txt"; fail "merge by hand failed"; }
grep -q "^slow,.*NOT GRADED" "$class/merged/gradebook.csv" || fail "the gradebook does not list slow as NOT GRADED: $(cat "$class/merged/gradebook.csv")"
python3 - "$class/merged/results.json" <<'PY' || fail "merged results.json with slow missing"
import json, sys
r = json.load(open(sys.argv[1]))
subs = {s["name"]: s for s in r["submissions"]}
assert sorted(subs) == ["broken", "good", "skeleton", "slow"], sorted(subs)
assert subs["slow"]["not_graded"] and subs["slow"]["labs"] == [], subs["slow"]
assert all(not subs[n]["not_graded"] for n in ("broken", "good", "skeleton"))
PY
note "status and merge show task $slow_task missing"

# --- resubmit ---------------------------------------------------------------------------------
before="$(cd "$class/results" && sha256sum task-*)"
echo "$before" | grep -q "task-$slow_task\." && fail "task $slow_task left result files behind"
[ "$(echo "$before" | grep -c '\.json$')" = 3 ] || fail "expected 3 task results, have: $before"
resubmit_out="$("$course_slurm" resubmit --class-dir "$class")" || fail "resubmit failed: $resubmit_out"
echo "$resubmit_out"
read -r array2 merge2 < <(echo "$resubmit_out" | sed -n "s/^re-submitted tasks $slow_task as array \([0-9]*\) .*merge job \([0-9]*\)$/\1 \2/p")
[ -n "${merge2:-}" ] || fail "resubmit should re-submit exactly task $slow_task"
wait_gone 900 "$array2" "$merge2"
[ "$(job_state "$merge2")" = COMPLETED ] || fail "the second merge job ended $(job_state "$merge2")"
"$course_slurm" status --class-dir "$class" || fail "status should say every task is done"
after="$(cd "$class/results" && sha256sum task-*)"
diff <(echo "$before") <(echo "$after" | grep -v "task-$slow_task\.") || fail "results of other tasks changed during the resubmit"
nothing_out="$("$course_slurm" resubmit --class-dir "$class")"
[ "$nothing_out" = "nothing to re-submit" ] || fail "a second resubmit should have nothing to do: $nothing_out"

# --- the merged gradebook ---------------------------------------------------------------------
python3 - "$source_dir" "$class" "$array_id" "$array2" "$slow_task" "${lab_list[@]}" <<'PY' || fail "the merged results are wrong (above)"
import csv, json, os, sys
import xml.etree.ElementTree as ET
source, cls, first_array, second_array, slow_task, labs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
tasks = [line.strip() for line in open(cls + "/plan/tasks.txt")]
m = cls + "/merged/"
r = json.load(open(m + "results.json"))
seed = int(open(cls + "/plan/seed").read())
assert r["seed"] == seed, (r["seed"], seed)

def fnv(text):  # the grader's per-student seed: FNV-1a-64("<run seed>:<name>") mod 1e9
    h = 0xcbf29ce484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h % 1000000000

subs = {s["name"]: s for s in r["submissions"]}
assert sorted(subs) == ["broken", "good", "skeleton", "slow"], sorted(subs)
want = {"good": "passed", "slow": "passed", "skeleton": "failed", "broken": "failed"}
for name, s in subs.items():
    assert not s["not_graded"], (name, s["not_graded"])
    assert s["seed"] == fnv(f"{seed}:{name}"), (name, s["seed"], "is not the class seed's")
    # Which Slurm task graded whom: the first array, the slow student the re-submitted one.
    task = tasks.index(name) + 1
    array = second_array if str(task) == slow_task else first_array
    assert s["slurm_job"] == f"{array}_{task}", (name, s["slurm_job"], f"{array}_{task}")
    assert s["host"], (name, "no host recorded")
    assert len(s["labs"]) == len(labs), (name, [l["lab"] for l in s["labs"]], labs)
    for lab in s["labs"]:
        assert lab["status"] == want[name], (name, lab["lab"], lab["status"], lab["reason"])
        if name == "skeleton":
            assert "not implemented" in lab["reason"].lower(), (name, lab["reason"])
        if name == "broken":
            assert "does not compile" in lab["reason"], (name, lab["reason"])

# Gradebook: one row per student, a lab's cell is its points: full points exactly when passed.
rows = list(csv.reader(open(m + "gradebook.csv")))
header, body = rows[0], {row[0]: row for row in rows[1:]}
assert sorted(body) == sorted(subs), sorted(body)
points = str(r["points_per_lab"])
for name, s in subs.items():
    for lab in s["labs"]:
        cell = body[name][header.index(lab["lab"])]
        assert (cell == points) == (lab["status"] == "passed"), (name, lab["lab"], cell)
    assert "NOT GRADED" not in ",".join(body[name]), body[name]

# JUnit: a suite per student and lab, clean exactly when the lab passed.
suites = {s.get("name"): s for s in ET.parse(m + "junit.xml").getroot().iter("testsuite")}
for name, s in subs.items():
    for lab in s["labs"]:
        suite = suites[f"{name}.{lab['lab']}"]
        clean = suite.get("failures") == "0" and suite.get("errors") == "0"
        assert clean == (lab["status"] == "passed"), (name, lab["lab"], suite.attrib)
json.load(open(m + "gradescope.json"))
# The instructor's report, where the course has it (the merge job draws it).
if os.path.exists(os.path.join(source, "grader/report/instructor_report.py")):
    page = open(m + "report.html").read()
    assert all(name in page for name in subs), "report.html does not name every student"
print("merged: 4 students, verdicts, seeds, gradebook and JUnit agree")
PY
note "PASS: a class graded through Slurm, one task killed and re-submitted"
