#!/usr/bin/env bash
# The PS-vs-ring study on the bottleneck lab (docs/lab.md), as a benchmark:
# builds a lab of 8 worker hosts and 8 server hosts (each worker host also
# runs a colocated gradsync-ps), runs the three sweeps that docs/lab.md
# shows, plots them, and takes the lab down again, even on failure.
#
#   sudo scripts/bench/lab_study.sh [--out DIR] [--link RATE] [--hosts N]
#                                   [--ps-transport plane|grpc]
#                                   [-- EXTRA SWEEP FLAGS]
#
# The PS steps go over the servers' tensor planes (the default), which
# halves the PS cells' CPU against gRPC streams (--ps-transport grpc,
# docs/performance/lab-ps-transport.md).
#
# Writes DIR/main (ring and PS on separate server hosts: N = 2,4,6,8,
# K = 1,2,N, S = 16M,32M), DIR/colocated (PS colocated, K = N, S =
# 8M,16M), DIR/crossover (N = 8, S = 16M, every K) and DIR/small (main's
# grid at S = 4M,8M, where the PS's per-partition CPU starts to decide on
# two cores: with K = N = 8 and 128 KiB partitions a step is up to 512
# gRPC streams), each with sweep.json, sweep.csv, report.txt and the PNGs.
# Defaults: --out lab-study, --link 100mbit (slow enough that two cores
# are not the limit for S >= 16M), 8 hosts. About 50 minutes.
# Needs root, iproute2 and python3-matplotlib (scripts/install_deps.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
G="${GRADSYNC:-$root/build/cli/gradsync}"
out=lab-study
link=100mbit
hosts=8
plane=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --ps-transport) plane=(--ps-transport "$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--out DIR] [--link RATE] [--hosts N] [--ps-transport plane|grpc] [-- SWEEP FLAGS]" >&2; exit 2 ;;
  esac
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-study.XXXXXX")
prefix="gsb$(( $$ % 100000 ))"
cleanup() {
  "$G" lab down --run-dir "$dir" --prefix "$prefix" || true
  rm -rf "$dir"
}
trap cleanup EXIT
"$G" lab up --hosts "$hosts" --ps-hosts "$hosts" --colocate-ps --link "$link" \
  --prefix "$prefix" --subnet "10.76.$(( $$ % 200 ))" --run-dir "$dir" \
  --timeout 120 "${plane[@]}"
common=(--run-dir "$dir" --steps 5 --warmup 2 --ps-partition 128K --plot)
"$G" lab sweep "${common[@]}" --workers 2,4,6,8 --shards 1,2,N \
  --sizes 16M,32M --layouts ring,ps --out "$out/main" "$@"
"$G" lab sweep "${common[@]}" --workers 2,4,6,8 --shards N \
  --sizes 8M,16M --layouts ps-colocated --out "$out/colocated" "$@"
"$G" lab sweep "${common[@]}" --workers "$hosts" --shards all --sizes 16M \
  --layouts ring,ps --out "$out/crossover" "$@"
"$G" lab sweep "${common[@]}" --workers 2,4,6,8 --shards 1,2,N --sizes 4M,8M \
  --layouts ring,ps --out "$out/small" "$@"
