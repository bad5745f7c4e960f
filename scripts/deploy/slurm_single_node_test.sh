#!/usr/bin/env bash
# deploy/slurm/gradsync.sbatch on a one-node Slurm cluster made on this
# host: munged, slurmctld and slurmd from Debian's slurm-wlm, run in the
# foreground from a temporary directory (no systemd needed), with their own
# slurm.conf (SLURM_CONF) and munge socket. Submits the sbatch script with
# a small synthetic PS job, waits for it, and checks that it succeeded, that
# every daemon was stopped with SIGTERM, and that none is left running. Everything it starts is stopped
# on exit. Needs root (slurmd runs jobs as their user) and slurm-wlm:
#   apt-get install --no-install-recommends slurm-wlm
# Not part of ctest: it starts system daemons on fixed ports (6817, 6818).
#
#   scripts/deploy/slurm_single_node_test.sh BIN_DIR
#   (BIN_DIR: gradsync and its daemons side by side, e.g. /usr/bin after the
#   Debian package, or a `cmake --install` prefix's bin)
set -euo pipefail

bin=${1:?usage: slurm_single_node_test.sh BIN_DIR}
bin=$(cd "$bin" && pwd)
here=$(cd "$(dirname "$0")/../.." && pwd)
die() {
  echo "slurm_single_node_test: FAILED: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || die "run it as root (slurmd must be root)"
for tool in munged slurmctld slurmd sbatch squeue sacct scontrol; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "$tool is missing; apt-get install --no-install-recommends slurm-wlm"
done

work=$(mktemp -d /tmp/gradsync-slurm.XXXXXX)
chmod 0755 "$work"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

node=$(hostname -s)
read -r cpus memory < <(slurmd -C | sed -n \
  's/.*CPUs=\([0-9]*\).*RealMemory=\([0-9]*\).*/\1 \2/p' | head -1)
[[ -n "$cpus" ]] || die "slurmd -C did not describe this node"
mkdir -p "$work/ctld" "$work/d" "$work/munge" "$work/out"
cat >"$work/slurm.conf" <<CONF
ClusterName=gradsync-test
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
StateSaveLocation=$work/ctld
SlurmdSpoolDir=$work/d
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
NodeName=$node CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"

munged --foreground --force --socket="$work/munge/socket" \
  --key-file=/etc/munge/munge.key --pid-file="$work/munge/pid" \
  --log-file="$work/munge/log" --seed-file="$work/munge/seed" &
pids+=("$!")
slurmctld -D -i >"$work/slurmctld.out" 2>&1 &
pids+=("$!")
slurmd -D >"$work/slurmd.out" 2>&1 &
pids+=("$!")
for _ in $(seq 60); do
  sinfo -h -o '%T' 2>/dev/null | grep -qx idle && break
  sleep 1
done
sinfo -h -o '%T' | grep -qx idle ||
  { cat "$work"/*.log "$work"/*.out >&2 || true; die "the node never became idle"; }
echo "slurm_single_node_test: one-node Slurm up ($node, $cpus CPUs)"

job=$(cd "$work/out" && GRADSYNC_BIN_DIR="$bin" GRADSYNC_PS_NODES=1 \
  GRADSYNC_READY_S=60 sbatch --parsable --nodes=1 --time=5 \
  "$here/deploy/slurm/gradsync.sbatch" --workers 1 --model synthetic \
  --synthetic-floats 4096 --compute-ms 1 --dataset synthetic --steps 20 \
  --mode ps)
echo "slurm_single_node_test: submitted Slurm job $job"
for _ in $(seq 240); do
  [[ -z $(squeue -h -j "$job" 2>/dev/null) ]] && break
  sleep 1
done
[[ -z $(squeue -h -j "$job" 2>/dev/null) ]] || die "job $job still runs after 4 minutes"
state=$(scontrol show job "$job" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
out="$work/out/gradsync-$job.out"
cat "$out"
[[ "$state" == COMPLETED ]] || {
  cat "$work/out/gradsync-$job/logs/"* 2>/dev/null >&2 || true
  die "job $job ended $state"
}
grep -q "JOB_STATE_SUCCEEDED\|SUCCEEDED" "$out" || die "the job's output shows no success"
grep -q "cluster stopped" "$out" || die "the sbatch script did not tear down"
# Stopped as the units stop them: SIGTERM, which each daemon logs (a step
# killed by srun would log nothing).
logs="$work/out/gradsync-$job/logs"
for log in "$logs"/worker-*.log "$logs"/ps-*.log "$logs/coordinator.log"; do
  grep -q "got Terminated" "$log" ||
    { cat "$log" >&2; die "$(basename "$log"): the daemon was not stopped with SIGTERM"; }
done
[[ ! -e "$work/out/gradsync-$job/tls" ]] || die "the allocation's CA was left behind"
! pgrep -f "$bin/gradsync-(coordinator|worker|ps) " >/dev/null ||
  die "gradsync daemons are still running after the job"
echo "slurm_single_node_test: OK (job $job $state)"
