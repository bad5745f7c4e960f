#!/bin/sh
# End to end with the real daemons and parameter servers: `gradsync local
# up --workers 1 --ps 2` in a temporary run directory (any free port), the
# servers in `gradsync workers --json`; a 2-rank job started on the ring,
# switched to the PS and back by `gradsync switch`, followed to success,
# its switches in `gradsync status --json`, and scripts/check_job.sh
# finding every step once, in the mode its switch table says, with the
# ranks' parameters bitwise equal; `local down` stopping it all. Every
# daemon runs mutual TLS (local up's default), and the PS steps go over
# the servers' tensor planes (the default transport, whose HMAC handshake
# proves the job's token beside TLS): the metrics say "plane". With `grpc`
# (local up --ps-transport grpc) they go over gRPC streams under TLS, and
# the metrics say "grpc".
# Usage: local_cluster_ps_e2e.sh PATH/TO/gradsync PATH/TO/check_job.sh [grpc]
set -eu
gradsync=$1
check_job=$2
transport=${3:-plane}
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-ps-e2e.XXXXXX")
cleanup() {
  "$gradsync" local down --run-dir "$dir" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

set -- --ps-transport "$transport"
out=$("$gradsync" local up --workers 1 --devices-per-worker cpu:2 --ps 2 \
  --port 0 --run-dir "$dir" --timeout 60 "$@")
echo "$out"
addr=$(echo "$out" | sed -n 's/^export GRADSYNC_COORDINATOR=//p')
[ -n "$addr" ] || { echo "no export line in the output of local up"; exit 1; }

export GRADSYNC_COORDINATOR=$addr
GRADSYNC_TOKEN_FILE=$(echo "$out" | sed -n 's/^export GRADSYNC_TOKEN_FILE=//p')
export GRADSYNC_TOKEN_FILE
GRADSYNC_TLS_DIR=$(echo "$out" | sed -n 's/^export GRADSYNC_TLS_DIR=//p')
[ -n "$GRADSYNC_TLS_DIR" ] || { echo "no TLS dir export line"; exit 1; }
export GRADSYNC_TLS_DIR
for log in coordinator worker-0 ps-0 ps-1; do
  grep -q "gRPC over mTLS" "$dir/$log.log" ||
    { echo "$log does not run mTLS:"; cat "$dir/$log.log"; exit 1; }
done
for log in ps-0 ps-1; do
  grep -q "tensor plane (plain TCP) on port" "$dir/$log.log" ||
    { echo "$log opened no tensor plane:"; cat "$dir/$log.log"; exit 1; }
done
"$gradsync" workers --json
job=$("$gradsync" submit --workers 2 --model synthetic --synthetic-floats 4096 \
  --compute-ms 2 --dataset synthetic --steps 1500 --mode ring --json |
  sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p')
[ -n "$job" ] || { echo "submit printed no job id"; exit 1; }
# Wait until it steps, then switch it to the PS and back.
i=0
until "$gradsync" status "$job" --json | grep -q '"state": *"JOB_STATE_RUNNING"'; do
  i=$((i + 1)); [ $i -lt 300 ] || { echo "job never ran"; exit 1; }
  sleep 0.1
done
"$gradsync" switch "$job" ps
sleep 1
"$gradsync" switch "$job" ring
"$gradsync" watch "$job" --deadline 120 >/dev/null
status=$("$gradsync" status "$job" --json)
echo "$status"
echo "$status" | grep -q '"state": *"JOB_STATE_SUCCEEDED"' ||
  { echo "job did not succeed"; exit 1; }
echo "$status" | grep -q '"toMode": *"SYNC_MODE_PS"' ||
  { echo "no switch to PS recorded"; exit 1; }
echo "$status" | grep -q '"toMode": *"SYNC_MODE_RING"' ||
  { echo "no switch back to the ring recorded"; exit 1; }
GRADSYNC=$gradsync "$check_job" "$job" --switches 2
# Every PS step went over the transport asked for.
"$gradsync" metrics "$job" -o json > "$dir/metrics.json"
if grep -o '"psTransport": *"[a-z][a-z]*"' "$dir/metrics.json" | grep -v "\"$transport\""; then
  echo "PS steps over another transport than $transport"; exit 1
fi
grep -q "\"psTransport\": *\"$transport\"" "$dir/metrics.json" ||
  { echo "no PS step says it went over $transport"; exit 1; }
echo "PS steps over $transport"
# The workers' lines about the job, through the coordinator: the worker's
# own and each rank's, with the worker's host; --rank keeps one rank's.
logs=$("$gradsync" logs "$job")
echo "$logs"
echo "$logs" | grep -q "rank -  starting ranks \[0, 1\] of 2" ||
  { echo "gradsync logs lacks the worker's start line"; exit 1; }
for r in 0 1; do
  echo "$logs" | grep -q "rank $r  rank $r: succeeded after 1500 steps" ||
    { echo "gradsync logs lacks rank $r's end"; exit 1; }
done
if "$gradsync" logs "$job" --rank 1 | grep -v "  rank 1  " | grep -q .; then
  echo "gradsync logs --rank 1 printed another rank's line"; exit 1
fi
"$gradsync" logs "$job" --rank 1 | grep -q "rank 1: succeeded" ||
  { echo "gradsync logs --rank 1 lacks rank 1's end"; exit 1; }
"$gradsync" local down --run-dir "$dir"
echo "local-cluster-ps-e2e-ok"
