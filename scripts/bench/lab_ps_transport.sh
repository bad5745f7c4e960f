#!/usr/bin/env bash
# The PS over gRPC against the PS over the tensor plane, on the bottleneck
# lab (docs/performance/lab-ps-transport.md): the same emulated hosts, links
# and sweep, once per transport, RUNS times, alternating. Each run is a
# fresh `gradsync lab up` (--ps-transport grpc or plane), one
# `gradsync lab sweep`, and `lab down`; the sweeps land in
# OUT/<link>/<grpc|plane>-<run>/ (sweep.json, report.txt), and
# scripts/bench/plot_lab_transport.py OUT/<link> draws them.
#
#   sudo scripts/bench/lab_ps_transport.sh [--link 1gbit] [--runs 3]
#       [--hosts 4] [--out lab-ps-transport] [-- EXTRA SWEEP FLAGS]
#
# Needs root (namespaces, tc) and a built tree (build/cli/gradsync, or
# GRADSYNC=PATH). Cleans up its lab on any exit.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
G="${GRADSYNC:-$root/build/cli/gradsync}"
out=lab-ps-transport
link=1gbit
runs=3
hosts=4
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--link RATE] [--runs N] [--hosts N] [--out DIR] [-- SWEEP FLAGS]" >&2; exit 2 ;;
  esac
done
prefix="gpt$(( $$ % 100000 ))"
dir=""
cleanup() {
  if [[ -n "${dir}" ]]; then
    "$G" lab down --run-dir "$dir" --prefix "$prefix" >/dev/null 2>&1 || true
    rm -rf "$dir"
  fi
}
trap cleanup EXIT
mkdir -p "$out/$link"
for run in $(seq 1 "$runs"); do
  for transport in grpc plane; do
    dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-lab-transport.XXXXXX")
    plane=(--ps-transport "$transport")
    "$G" lab up --hosts "$hosts" --ps-hosts "$hosts" --link "$link" \
      --prefix "$prefix" --subnet "10.75.$(( $$ % 200 ))" --run-dir "$dir" \
      --timeout 120 "${plane[@]}"
    "$G" lab sweep --run-dir "$dir" --steps 5 --warmup 2 --ps-partition 128K \
      --workers 2,"$hosts" --shards 1,N --sizes 16M --layouts ring,ps \
      --out "$out/$link/$transport-$run" "$@"
    cleanup
    dir=""
  done
done
echo "sweeps in $out/$link; plot them with: scripts/bench/plot_lab_transport.py $out/$link"
