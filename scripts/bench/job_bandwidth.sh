#!/usr/bin/env bash
# The parameter-server bottleneck as jobs measure it themselves. For each
# world size N, one job on a local cluster (`gradsync local up`) runs its
# first half through the parameter server (K shards, sync mode) and its
# second half through the ring; the script then prints the job's own means
# per mode from `gradsync metrics JOB --format table`: step time, exposed
# communication time, algbw and busbw (nccl-tests' definitions, see
# study/alpha_beta/sync_bandwidth.h), and with --link-gbps their share of the ideal
# busbw.
#
#   scripts/bench/job_bandwidth.sh                       # N = 2 3 4, 64 MB
#   scripts/bench/job_bandwidth.sh --workers "2 4" --floats 4M --link-gbps 3
#   GRADSYNC_COORDINATOR=head:29400 scripts/bench/job_bandwidth.sh --cluster \
#       --workers "2 4 8" --ps-shards 2 --link-gbps 12.5 --node-link-gbps 50
#
# Options: --workers "LIST" (2 3 4), --ps-shards K (1), --floats F (the
# synthetic model's gradient elements, 16M), --compute-ms T (its emulated
# compute per step, 20), --steps S (40, half in each mode), --device D
# (cpu, or cuda: GPU ranks, the NCCL ring), --link-gbps B and
# --node-link-gbps I (none; the ideal busbw, see `gradsync metrics
# --help`). Uses $BUILD_DIR/cli/gradsync (BUILD_DIR defaults to build/).
# Without --cluster, a local cluster (`gradsync local up`) runs from a
# temporary directory on a free port and is stopped on exit; with
# --cluster, the jobs run on the cluster at $GRADSYNC_COORDINATOR (its
# workers and parameter servers, across nodes), which needs max(LIST)
# free devices. Exit status: 0 when every job succeeded, 1 otherwise, 2
# for bad usage.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build_dir="${BUILD_DIR:-build}"
[[ "$build_dir" == /* ]] || build_dir="$root/$build_dir"
gradsync="$build_dir/cli/gradsync"
workers="2 3 4"
shards=1
floats=16M
compute_ms=20
steps=40
device=cpu
link_gbps=""
node_link_gbps=""
cluster=0

usage() {
  echo "usage: $0 [--cluster] [--workers \"N ...\"] [--ps-shards K]" \
    "[--floats F] [--compute-ms T] [--steps S] [--device cpu|cuda]" \
    "[--link-gbps B [--node-link-gbps I]]" >&2
  exit 2
}

number='^[0-9]*\.?[0-9]+$'
while [[ $# -gt 0 ]]; do
  if [[ "$1" == --cluster ]]; then
    cluster=1
    shift
    continue
  fi
  [[ $# -ge 2 ]] || usage
  case "$1" in
    --workers) [[ "$2" =~ ^[1-9][0-9]*( [1-9][0-9]*)*$ ]] || usage ;;
    --ps-shards | --steps) [[ "$2" =~ ^[1-9][0-9]*$ ]] || usage ;;
    --floats) [[ "$2" =~ ^[1-9][0-9]*[KMG]?$ ]] || usage ;;
    --compute-ms | --link-gbps | --node-link-gbps)
      [[ "$2" =~ $number ]] || usage
      ;;
    --device) [[ "$2" == cpu || "$2" == cuda ]] || usage ;;
    *) usage ;;
  esac
  case "$1" in
    --workers) workers=$2 ;;
    --ps-shards) shards=$2 ;;
    --floats) floats=$2 ;;
    --compute-ms) compute_ms=$2 ;;
    --steps) steps=$2 ;;
    --link-gbps) link_gbps=$2 ;;
    --node-link-gbps) node_link_gbps=$2 ;;
    --device) device=$2 ;;
  esac
  shift 2
done
((steps >= 2)) || usage
[[ -z "$node_link_gbps" || -n "$link_gbps" ]] || usage
[[ -x "$gradsync" ]] || {
  echo "$0: no $gradsync; build first (scripts/test.sh)" >&2
  exit 1
}

max_workers=0
for n in $workers; do ((n > max_workers)) && max_workers=$n; done
if ((cluster)); then
  [[ -n "${GRADSYNC_COORDINATOR:-}" ]] || {
    echo "$0: --cluster needs GRADSYNC_COORDINATOR=HOST:PORT of the cluster" >&2
    exit 2
  }
  where="the cluster at $GRADSYNC_COORDINATOR"
  listing=$("$gradsync" workers) || {
    echo "$0: cannot list the cluster at $GRADSYNC_COORDINATOR" >&2
    exit 1
  }
else
  run_dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-job-bandwidth.XXXXXX")
  stop_cluster() {
    "$gradsync" local down --run-dir "$run_dir" >/dev/null 2>&1 || true
  }
  trap stop_cluster EXIT
  up=$("$gradsync" local up --workers "$max_workers" --ps "$shards" \
    --port 0 --run-dir "$run_dir")
  GRADSYNC_COORDINATOR=$(sed -n 's/^export GRADSYNC_COORDINATOR=//p' <<<"$up")
  [[ -n "$GRADSYNC_COORDINATOR" ]] || {
    echo "$0: gradsync local up printed no coordinator address:" >&2
    echo "$up" >&2
    exit 1
  }
  export GRADSYNC_COORDINATOR
  GRADSYNC_TOKEN_FILE=$(sed -n 's/^export GRADSYNC_TOKEN_FILE=//p' <<<"$up")
  export GRADSYNC_TOKEN_FILE
  GRADSYNC_TLS_DIR=$(sed -n 's/^export GRADSYNC_TLS_DIR=//p' <<<"$up")
  export GRADSYNC_TLS_DIR
  where="a local cluster on 127.0.0.1 (logs in $run_dir)"
  listing=$("$gradsync" workers)
fi

echo "# jobs: synthetic model of $floats floats, $compute_ms ms compute per" \
  "step, $steps steps on $device ranks: ps (K=$shards, sync) then ring" \
  "from step $((steps / 2))"
echo "# on $where:"
sed 's/^/#   /' <<<"$listing"
ideal_column=""
[[ -n "$link_gbps" ]] && ideal_column="  of_ideal"
printf '# %2s  %-4s  %8s  %8s  %6s  %6s%s\n' N mode step_ms comm_ms algbw \
  busbw "$ideal_column"

failures=0
for n in $workers; do
  if ! follow=$("$gradsync" submit --model synthetic --synthetic-floats \
    "$floats" --compute-ms "$compute_ms" --workers "$n" --steps "$steps" \
    --device "$device" --mode ps --ps-shards "$shards" \
    --switch-at "$((steps / 2)):ring" --follow --every "$steps" 2>&1); then
    echo "$0: the job with $n workers failed:" >&2
    echo "$follow" >&2
    failures=$((failures + 1))
    continue
  fi
  job=$(sed -n 's/^submitted job \([^ ]*\) .*/\1/p' <<<"$follow")
  metrics=$("$gradsync" metrics "$job" --format table \
    ${link_gbps:+--link-gbps "$link_gbps"} \
    ${node_link_gbps:+--node-link-gbps "$node_link_gbps"})
  # The rows of "per-step means by sync mode": MODE STEPS COMPUTE_MS
  # COMM_MS IDLE_MS STEP_MS COMM SENT/STEP RECV/STEP ALGBW BUSBW [OF_IDEAL],
  # the byte columns two words each.
  awk -v n="$n" -v ideal="$link_gbps" '
    /^per-step means by sync mode:/ { in_modes = 1; next }
    /^$/ { in_modes = 0 }
    in_modes && ($1 == "ps" || $1 == "ring") {
      last = ideal == "" ? NF : NF - 1
      printf "  %2d  %-4s  %8s  %8s  %6s  %6s", n, $1, $6, $4, $(last - 1),
        $last
      if (ideal != "") printf "  %8s", $NF
      printf "\n"
    }' <<<"$metrics"
done
exit $((failures > 0))
