#!/usr/bin/env bash
# The bottleneck lab end to end, with real namespaces, veths, tc and the real
# daemons: `gradsync lab up` (2 worker hosts and 1 server host plus the
# coordinator's head, 200 Mbit/s links), `lab probe`, one MLP job on
# Fashion-MNIST that starts on the ring and is switched to the PS at runtime
# with `gradsync switch`, checked with scripts/check_job.sh, `gradsync
# explain` on it, `lab down`, and then that nothing is left: no namespace,
# veth, bridge or daemon.
#
# Needs root (network namespaces, tc) and iproute2; without them it skips
# (exit 77) saying what is missing. Names carry a prefix of its own, so it
# never touches a lab a person runs.
#
# Usage: lab_smoke_test.sh PATH/TO/gradsync PATH/TO/scripts/check_job.sh
set -euo pipefail
gradsync=$1
check_job=$2
export GRADSYNC="$gradsync"

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "the lab needs root (network namespaces and tc)"
command -v ip >/dev/null || skip "the lab needs iproute2's ip (apt-get install iproute2)"
command -v tc >/dev/null || skip "the lab needs iproute2's tc (apt-get install iproute2)"
prefix="gst$(( $$ % 100000 ))"
if ! ip netns add "${prefix}-x" 2>/dev/null; then
  skip "this machine refuses network namespaces (ip netns add failed)"
fi
ip netns del "${prefix}-x"

dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-lab.XXXXXX")
subnet="10.79.$(( $$ % 200 ))"
cleanup() {
  "$gradsync" lab down --run-dir "$dir" --prefix "$prefix" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

out=$("$gradsync" lab up --hosts 2 --ps-hosts 1 --link 200mbit \
      --prefix "$prefix" --subnet "$subnet" --run-dir "$dir" --timeout 60)
echo "$out"
addr=$(echo "$out" | sed -n 's/^export GRADSYNC_COORDINATOR=//p')
[ "$addr" = "${subnet}.1:29400" ] || { echo "unexpected coordinator '$addr'"; exit 1; }
export GRADSYNC_COORDINATOR=$addr
if ! echo "$out" | grep -q "links OK"; then
  # One busy moment of the host can slow a pair during lab up's probe (seen
  # once in a full ctest run: 130 of 191 Mbit/s with all pairs at once); a
  # link that is really off fails the second probe too.
  again=$("$gradsync" lab probe --run-dir "$dir")
  echo "$again"
  echo "$again" | grep -q "links OK" || { echo "the links did not pass the probe"; exit 1; }
fi

# Every daemon runs in its host's namespace and registered with its name.
workers=$("$gradsync" workers --json)
echo "$workers" | grep -q '"host":"w1"' || { echo "no worker on host w1"; exit 1; }
echo "$workers" | grep -q '"host":"s1"' || { echo "no server on host s1"; exit 1; }
"$gradsync" lab status --run-dir "$dir"
# -o csv: a header, then one row per host (the head, 2 workers, 1 server).
csv=$("$gradsync" lab status --run-dir "$dir" -o csv)
[ "$(echo "$csv" | head -1)" = "host,address,netns,runs,daemons" ] &&
  [ "$(echo "$csv" | wc -l)" -eq 5 ] ||
  { echo "lab status -o csv: $csv"; exit 1; }
# `lab probe` against the running lab: every pair alone must meet its
# rate. Its all-at-once round is not judged here: it depends on how busy
# this machine is (one flow of 0.3 s fell to 90 Mbit/s in a full ctest
# run), and lab up's probe above already judged it.
probe=$("$gradsync" lab probe --run-dir "$dir" --duration 0.3 || true)
echo "$probe"
[ "$(echo "$probe" | grep -c ' ok$')" -eq 4 ] ||
  { echo "lab probe: not every pair met its rate"; exit 1; }

# 60 steps on the ring (about 50 ms each over these links), switched to
# the PS at runtime after step 10.
job=$("$gradsync" submit --workers 2 --layers 784,256,256,10 --optimizer adam \
      --lr 0.001 --batch-size 64 --steps 60 --seed 3 --ps-shards 1 \
      --json | sed -n 's/.*"jobId":"\([^"]*\)".*/\1/p')
[ -n "$job" ] || { echo "submit printed no job id"; exit 1; }
for _ in $(seq 1 300); do
  step=$("$gradsync" status "$job" --json | sed -n 's/.*"step":"\{0,1\}\([0-9]*\).*/\1/p')
  [ "${step:-0}" -ge 10 ] && break
  sleep 0.05
done
"$gradsync" switch "$job" ps
"$gradsync" watch "$job" >/dev/null
"$check_job" "$job" --switches 1
"$gradsync" explain "$job" --lab-dir "$dir"

# The coordinator's model follows the links: lab up told it 200 Mbit/s,
# set-link tells it the new rate (TCP payload: 1448 of every 1514 bytes).
link_gbps() {
  "$gradsync" workers --json | /usr/bin/python3 -c '
import json, sys
print(json.load(sys.stdin).get("linkFacts", {}).get("linkGbps", 0))'
}
expect_gbps() {
  /usr/bin/python3 -c '
import sys
got, want = float(sys.argv[1]), float(sys.argv[2]) / 8e9 * 1448 / 1514
sys.exit(0 if abs(got - want) <= 1e-6 * want else
         "coordinator link facts %g GB/s, want %g" % (got, want))' "$1" "$2"
}
expect_gbps "$(link_gbps)" 200e6
"$gradsync" lab set-link --link 100mbit --run-dir "$dir"
expect_gbps "$(link_gbps)" 100e6
"$gradsync" workers | grep -q "links (--mode auto's model)" ||
  { echo "gradsync workers does not show the link facts"; exit 1; }

pids=$(grep -o '"pid":[0-9]*' "$dir/cluster.json" | cut -d: -f2)
[ -n "$pids" ] || { echo "no daemons in cluster.json"; exit 1; }
"$gradsync" lab down --run-dir "$dir"
left=$(ip netns list | grep "^${prefix}-" || true)
[ -z "$left" ] || { echo "namespaces left: $left"; exit 1; }
links=$(ls /sys/class/net | grep "^${prefix}-" || true)
[ -z "$links" ] || { echo "interfaces left: $links"; exit 1; }
# Gone, or a zombie that only waits for init to reap it.
for pid in $pids; do
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
  if [ -n "$state" ] && [ "$state" != Z ]; then
    echo "daemon $pid left: $(tr '\0' ' ' < /proc/$pid/cmdline)"
    exit 1
  fi
done
[ ! -f "$dir/lab.json" ] || { echo "lab.json left"; exit 1; }
# Down again: nothing to do, and no error.
"$gradsync" lab down --run-dir "$dir" --prefix "$prefix"
echo "lab-smoke-ok"
