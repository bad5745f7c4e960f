#!/usr/bin/env bash
# `--mode auto` on the bottleneck lab: 6 worker hosts and 6 server hosts on
# 500 Mbit/s links. A job with one PS shard must settle on the ring: the
# server's link carries 6 S each way, 3.6 times the ring's 2(N-1)/N S. A job
# with 6 shards on hosts of their own must measure both paths and settle on
# the one its own measurements found faster. Which one that is is not
# asserted: the model gives the PS x1.43, but gradsync's PS pipeline reaches
# only about 80% of the link (docs/lab.md), so the two measure within noise
# of each other here (x1.08 either way in repeated runs). Each decision
# names the measured step times and the model's prediction. Skips (exit 77)
# without root or iproute2.
#
# Usage: lab_auto_test.sh PATH/TO/gradsync
set -euo pipefail
gradsync=$1

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "the lab needs root (network namespaces and tc)"
command -v ip >/dev/null && command -v tc >/dev/null ||
  skip "the lab needs iproute2 (apt-get install iproute2)"
prefix="gsa$(( $$ % 100000 ))"
ip netns add "${prefix}-x" 2>/dev/null ||
  skip "this machine refuses network namespaces (ip netns add failed)"
ip netns del "${prefix}-x"

dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-lab-auto.XXXXXX")
subnet="10.78.$(( $$ % 200 ))"
cleanup() {
  "$gradsync" lab down --run-dir "$dir" --prefix "$prefix" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

out=$("$gradsync" lab up --hosts 6 --ps-hosts 6 --link 500mbit \
      --prefix "$prefix" --subnet "$subnet" --run-dir "$dir" --timeout 90)
echo "$out"
export GRADSYNC_COORDINATOR=$(echo "$out" | sed -n 's/^export GRADSYNC_COORDINATOR=//p')

# Submits an auto job with K separate shards and buckets of B MiB, follows
# it, prints its final status as JSON.
run() {
  local shards=$1 bucket_mb=$2
  local job
  job=$("$gradsync" submit --model synthetic --synthetic-floats 2M \
        --workers 6 --steps 30 --mode auto --auto-probe-steps 4 \
        --ps-shards "$shards" --ps-placement separate \
        --ps-partition-bytes 256K --bucket-mb "$bucket_mb" --json |
        sed -n 's/.*"jobId":"\([^"]*\)".*/\1/p')
  [ -n "$job" ] || { echo "submit printed no job id" >&2; exit 1; }
  "$gradsync" watch "$job" >/dev/null
  "$gradsync" explain "$job" --lab-dir "$dir" >&2
  "$gradsync" status "$job" --json
}

# The mode of the last decision, and its reason.
last_choice() {
  /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)
d = [x for x in s.get("modeDecisions", []) if "faster" in x.get("reason", "")]
if s.get("state") != "JOB_STATE_SUCCEEDED" or not d:
    print("none", s.get("state"), s.get("message", ""))
else:
    print(d[-1].get("chosen"), d[-1]["reason"])
'
}

one=$(run 1 25 | last_choice)
echo "K = 1: $one"
case "$one" in SYNC_MODE_RING*) ;; *) echo "auto did not settle on the ring with one shard"; exit 1 ;; esac
six=$(run 6 25 | last_choice)
echo "K = 6: $six"
# The chosen path is the one auto measured faster.
echo "$six" | /usr/bin/python3 -c '
import re, sys
line = sys.stdin.read()
m = re.search(r"measured ring ([0-9.]+) ms and ps ([0-9.]+) ms", line)
if not m or not line.startswith("SYNC_MODE_"):
    sys.exit("auto made no measured decision with six server hosts: " + line)
faster = "SYNC_MODE_RING" if float(m.group(1)) <= float(m.group(2)) else "SYNC_MODE_PS"
if not line.startswith(faster):
    sys.exit("auto settled against its own measurements: " + line)
'
echo "lab-auto-ok"
