# shellcheck shell=bash
# A throw-away single-node Slurm cluster on localhost, for tests: sourced, not run.
#
#   source local_cluster.sh
#   cluster_start DIR          # munged + slurmctld + slurmd, everything (config, state, logs,
#                              # sockets) under DIR; exports SLURM_CONF and PATH for the clients
#   ...sbatch / squeue / scancel...
#   cluster_stop               # stops the daemons it started (also call it from a trap)
#
# cluster_start returns 0 when the node is idle, or 77 after printing why it could not start
# (not root, packages missing, a daemon that fails: the tails of its log).
#
# Environment:
#   COURSE_SLURM_PREFIX  Slurm and munge unpacked with `dpkg -x` into this prefix instead of
#                        installed (a machine without a package registry): binaries from
#                        PREFIX/usr/{bin,sbin}, plugins from PREFIX/usr/lib/<arch>/slurm-wlm,
#                        libraries from PREFIX/usr/lib/<arch> (daemons: LD_LIBRARY_PATH;
#                        clients: wrappers in DIR/bin, so jobs do not inherit the path)
#   COURSE_SLURM_GPUS=N  configure N GPUs as generic resources (gres.conf File=/dev/nvidia0..N-1)
#
# Why each setting: the daemons run as root (slurmd must) from DIR with no system file touched,
# no systemd, no cgroups (proctrack/linuxproc, task/none: containers rarely delegate cgroups),
# and no accounting database (so `sacct` does not work here; squeue does).

cluster__pids=()

cluster__fail() {  # prints why and the tails of the daemons' logs, returns 77
  echo "SKIP: cannot start a local Slurm cluster: $*" >&2
  local log
  for log in "$CLUSTER_DIR"/log/*; do
    [ -s "$log" ] || continue
    echo "---- last lines of $log" >&2
    tail -n 15 "$log" >&2
  done
  cluster_stop
  return 77
}

cluster__free_port() {  # a TCP port nobody listens on now (bind to port 0, read it back)
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Finds the programs, installed or unpacked into COURSE_SLURM_PREFIX; sets cluster__* paths.
cluster__find_programs() {
  local prefix="${COURSE_SLURM_PREFIX:-}"
  local arch
  arch="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
  if [ -n "$prefix" ]; then
    [ -d "$prefix/usr" ] || { echo "COURSE_SLURM_PREFIX=$prefix has no usr/ folder (unpack the .deb files with dpkg -x DEB $prefix)"; return 1; }
    cluster__libs="$prefix/usr/lib/$arch/slurm-wlm:$prefix/usr/lib/$arch:$prefix/lib/$arch"
    cluster__plugin_dir="$prefix/usr/lib/$arch/slurm-wlm"
    # The clients run through wrappers that hand the library path to the dynamic loader itself
    # (ld.so --library-path), not as LD_LIBRARY_PATH: sbatch copies its environment into the
    # job, and the prefix's libraries must not replace the system's in the grader, cmake or nvcc.
    local loader client
    loader="$(readelf -l /bin/sh 2>/dev/null | sed -n 's/.*program interpreter: \(.*\)]$/\1/p')"
    [ -x "$loader" ] || { echo "cannot find the dynamic loader of /bin/sh (readelf from binutils is needed)"; return 1; }
    mkdir -p "$CLUSTER_DIR/bin"
    for client in sbatch squeue scancel sinfo scontrol sacct srun; do
      [ -x "$prefix/usr/bin/$client" ] || continue
      printf '#!/bin/sh\nexec %q --library-path %q %q "$@"\n' "$loader" "$cluster__libs" "$prefix/usr/bin/$client" >"$CLUSTER_DIR/bin/$client"
      chmod +x "$CLUSTER_DIR/bin/$client"
    done
    export PATH="$CLUSTER_DIR/bin:$PATH"
    # dpkg -x does not run the maintainer scripts, so the alternatives links (slurmd ->
    # slurmd-wlm) do not exist there. The daemons need their plain names: Slurm decides by its
    # program name whether it runs as slurmctld (slurmctld-wlm never gets the node's GPUs).
    local daemon
    mkdir -p "$CLUSTER_DIR/sbin"
    for daemon in slurmctld slurmd slurmstepd; do
      ln -sfn "$prefix/usr/sbin/$daemon-wlm" "$CLUSTER_DIR/sbin/$daemon"
    done
    cluster__slurmctld="$CLUSTER_DIR/sbin/slurmctld"
    cluster__slurmd="$CLUSTER_DIR/sbin/slurmd"
    cluster__slurmstepd="$CLUSTER_DIR/sbin/slurmstepd"
    cluster__munged="$prefix/usr/sbin/munged"
  else
    cluster__plugin_dir="/usr/lib/$arch/slurm-wlm"
    cluster__slurmctld="$(command -v slurmctld || echo /usr/sbin/slurmctld)"
    cluster__slurmd="$(command -v slurmd || echo /usr/sbin/slurmd)"
    cluster__slurmstepd="$(command -v slurmstepd || echo /usr/sbin/slurmstepd)"
    cluster__munged="$(command -v munged || echo /usr/sbin/munged)"
  fi
  local p missing=()
  for p in "$cluster__slurmctld" "$cluster__slurmd" "$cluster__slurmstepd" "$cluster__munged"; do
    [ -x "$p" ] || missing+=("$p")
  done
  for p in sbatch squeue scancel sinfo scontrol; do
    command -v "$p" >/dev/null || missing+=("$p")
  done
  [ -d "$cluster__plugin_dir" ] || missing+=("$cluster__plugin_dir")
  if [ ${#missing[@]} -gt 0 ]; then
    echo "missing: ${missing[*]} (install the Debian packages slurmctld slurmd slurm-client munge, or set COURSE_SLURM_PREFIX)"
    return 1
  fi
}

# Runs a daemon; from a prefix with its libraries found through LD_LIBRARY_PATH, which slurmd
# passes on to slurmstepd (jobs get the environment sbatch sent, not the daemons').
cluster__daemon() {
  if [ -n "${cluster__libs:-}" ]; then
    LD_LIBRARY_PATH="$cluster__libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
  else
    "$@"
  fi
}

cluster__wait_for() {  # cluster__wait_for SECONDS COMMAND...: polls until COMMAND succeeds
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.5
  done
}

cluster__node_idle() { [ "$(sinfo -h -N -n localhost -o %T 2>/dev/null)" = idle ]; }

cluster_start() {
  CLUSTER_DIR="$1"
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: a local Slurm cluster needs root (slurmd runs jobs as their user)" >&2; return 77; }
  local why
  why="$(cluster__find_programs)" || { echo "SKIP: $why" >&2; return 77; }
  cluster__find_programs  # again in this shell: the sub-shell's exports are lost
  mkdir -p "$CLUSTER_DIR"/{munge,etc,state,spool,log,run}
  chmod 755 "$CLUSTER_DIR" "$CLUSTER_DIR/run"
  chmod 700 "$CLUSTER_DIR/munge"

  # munge: a fresh key and a daemon with its own socket, pid, log and seed files.
  local socket="$CLUSTER_DIR/run/munge.socket"  # in a folder everyone may enter (munged checks)
  head -c 1024 /dev/urandom >"$CLUSTER_DIR/munge/munge.key"
  chmod 400 "$CLUSTER_DIR/munge/munge.key"
  # --force: munged refuses some ownership layouts (root, a world-writable /tmp above DIR)
  # it cannot prove safe; this key lives for one test.
  cluster__daemon "$cluster__munged" --force --socket="$socket" --key-file="$CLUSTER_DIR/munge/munge.key" \
    --pid-file="$CLUSTER_DIR/run/munged.pid" --log-file="$CLUSTER_DIR/log/munged.log" \
    --seed-file="$CLUSTER_DIR/munge/munged.seed" --num-threads=2 \
    >>"$CLUSTER_DIR/log/munged.log" 2>&1 || { cluster__fail "munged did not start"; return 77; }
  cluster__wait_for 10 test -S "$socket" || { cluster__fail "munged made no socket"; return 77; }
  cluster__pids+=("$(cat "$CLUSTER_DIR/run/munged.pid")")

  # slurm.conf: the machine's own CPUs and memory (as slurmd measures them, else it drains the
  # node), free ports so two test runs (or a real Slurm) never collide.
  # The node as slurmd sees it (CPUs, sockets, cores, threads, memory: "slurmd -C"), so it never
  # drains the node for a mismatch.
  local hardware cpus memory
  hardware="$(cluster__daemon "$cluster__slurmd" -C 2>/dev/null | sed -n 's/^NodeName=[^ ]* //p' | head -n 1)"
  cpus="$(echo "$hardware" | sed -n 's/.*CPUs=\([0-9]*\).*/\1/p')"
  memory="$(echo "$hardware" | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')"
  if [ -z "$cpus" ] || [ -z "$memory" ]; then
    cpus="$(nproc)"
    memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 ))
    hardware="CPUs=$cpus RealMemory=$memory"
  fi
  local gpus="${COURSE_SLURM_GPUS:-0}" gres_line="" node_gres=""
  if [ "$gpus" -gt 0 ] 2>/dev/null; then
    gres_line="GresTypes=gpu"
    node_gres="Gres=gpu:$gpus"
    local i
    : >"$CLUSTER_DIR/etc/gres.conf"
    for ((i = 0; i < gpus; i++)); do
      [ -c "/dev/nvidia$i" ] || { cluster__fail "COURSE_SLURM_GPUS=$gpus but /dev/nvidia$i does not exist (no GPU here?)"; return 77; }
      echo "Name=gpu File=/dev/nvidia$i" >>"$CLUSTER_DIR/etc/gres.conf"
    done
  fi
  # cgroup v2 without systemd (a VM or container whose init is not systemd): Slurm 22.05's
  # cgroup/v2 plugin asks systemd over D-Bus for a scope for slurmstepd, and slurmd refuses to
  # start without it, even with proctrack/linuxproc and task/none. COURSE_SLURM_CGROUP picks:
  #   host            leave it to Slurm (a machine with systemd, or cgroup v1)
  #   ignore-systemd  cgroup/v2 managed by slurmd itself (cgroup.conf IgnoreSystemd=yes)
  #   hidden          slurmd in a mount namespace of its own with a tmpfs over /sys/fs/cgroup
  #                   holding only an empty cgroup v1 hierarchy named systemd (what Slurm's
  #                   autodetection looks for): Slurm takes cgroup/v1, which needs no systemd,
  #                   and no plugin configured here puts a process into a cgroup
  #   auto (default)  hidden on cgroup v2 without a D-Bus system socket, else host
  cluster__cgroup="${COURSE_SLURM_CGROUP:-auto}"
  if [ "$cluster__cgroup" = auto ]; then
    cluster__cgroup=host
    if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] && [ ! -S /run/dbus/system_bus_socket ]; then
      cluster__cgroup=hidden
    fi
  fi
  case "$cluster__cgroup" in
    host | hidden) rm -f "$CLUSTER_DIR/etc/cgroup.conf" ;;
    ignore-systemd) printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' >"$CLUSTER_DIR/etc/cgroup.conf" ;;
    *) cluster__fail "COURSE_SLURM_CGROUP=$cluster__cgroup: use host, ignore-systemd, hidden or auto"; return 77 ;;
  esac
  cat >"$CLUSTER_DIR/etc/slurm.conf" <<CONF
ClusterName=coursetest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(cluster__free_port)
SlurmdPort=$(cluster__free_port)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
PluginDir=$cluster__plugin_dir
StateSaveLocation=$CLUSTER_DIR/state
SlurmdSpoolDir=$CLUSTER_DIR/spool
SlurmctldPidFile=$CLUSTER_DIR/run/slurmctld.pid
SlurmdPidFile=$CLUSTER_DIR/run/slurmd.pid
SlurmctldLogFile=$CLUSTER_DIR/log/slurmctld.log
SlurmdLogFile=$CLUSTER_DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
ReturnToService=2
# Jobs stay listed a while after they end, so a test can read their final state.
MinJobAge=600
KillWait=5
$gres_line
NodeName=localhost NodeAddr=127.0.0.1 $node_gres $hardware State=UNKNOWN
PartitionName=course Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$CLUSTER_DIR/etc/slurm.conf"

  cluster__daemon "$cluster__slurmctld" -f "$SLURM_CONF" -i >>"$CLUSTER_DIR/log/slurmctld.out" 2>&1 ||
    { cluster__fail "slurmctld did not start"; return 77; }
  cluster__wait_for 20 test -s "$CLUSTER_DIR/run/slurmctld.pid" || { cluster__fail "slurmctld wrote no pid file"; return 77; }
  cluster__pids+=("$(cat "$CLUSTER_DIR/run/slurmctld.pid")")
  cluster__wait_for 20 scontrol ping || { cluster__fail "slurmctld does not answer (scontrol ping)"; return 77; }

  # -N: the node's name in slurm.conf, whatever this machine's host name is; -d: slurmstepd by
  # its real path (it is not /usr/sbin/slurmstepd in an unpacked prefix).
  local hide=()
  [ "$cluster__cgroup" = hidden ] &&
    hide=(unshare --mount --propagation private sh -c \
      'mount -t tmpfs -o size=64k course-no-cgroup /sys/fs/cgroup && mkdir /sys/fs/cgroup/systemd &&
       mount -t cgroup -o none,name=systemd course-v1 /sys/fs/cgroup/systemd && exec "$@"' slurmd)
  cluster__daemon "${hide[@]}" "$cluster__slurmd" -f "$SLURM_CONF" -N localhost -d "$cluster__slurmstepd" >>"$CLUSTER_DIR/log/slurmd.out" 2>&1 ||
    { cluster__fail "slurmd did not start (cgroup mode $cluster__cgroup)"; return 77; }
  cluster__wait_for 20 test -s "$CLUSTER_DIR/run/slurmd.pid" || { cluster__fail "slurmd wrote no pid file"; return 77; }
  cluster__pids+=("$(cat "$CLUSTER_DIR/run/slurmd.pid")")
  cluster__wait_for 60 cluster__node_idle ||
    { cluster__fail "the node did not become idle: $(sinfo -h -N -o '%T %E' 2>&1)"; return 77; }
  echo "local Slurm cluster up in $CLUSTER_DIR ($cpus CPUs, $memory MB${node_gres:+, $node_gres})"
}

cluster_stop() {  # stops what cluster_start started, newest first; safe to call twice
  local i pid
  # Jobs still running (a test that failed half-way) are cancelled first, so no grader or
  # slurmstepd outlives the cluster.
  if [ ${#cluster__pids[@]} -gt 0 ] && [ -n "${SLURM_CONF:-}" ] && squeue -h -o %A 2>/dev/null | grep -q .; then
    squeue -h -o %A 2>/dev/null | xargs -r scancel --full 2>/dev/null || true
    for _ in $(seq 1 40); do squeue -h -o %A 2>/dev/null | grep -q . || break; sleep 0.25; done
  fi
  for ((i = ${#cluster__pids[@]} - 1; i >= 0; i--)); do
    pid="${cluster__pids[i]}"
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  cluster__pids=()
}
