#!/usr/bin/env bash
# The PS-vs-ring study on the bottleneck lab (docs/lab.md), as a benchmark:
# builds a lab of 8 worker hosts and 8 server hosts (each worker host also
# runs a colocated gradsync-ps), sweeps N x K x S x layout against the
# alpha-beta model, plots it, and takes the lab down again, even on failure.
#
#   sudo scripts/bench/lab_study.sh [--out DIR] [--link RATE] [-- SWEEP FLAGS]
#
# Defaults: --out lab-study, --link 1gbit; the sweep: N = 2,4,6,8,
# K = 1,2,N/2,N, S = 8M,32M, layouts ring, ps and ps-colocated. Sweep flags
# after "--" replace or add to those (e.g. -- --shards all --workers 8 for
# the crossover). Needs root, iproute2 and python3-matplotlib
# (scripts/install_deps.sh installs them).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
G="${GRADSYNC:-$root/build/cli/gradsync}"
out=lab-study
link=1gbit
hosts=8
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--out DIR] [--link RATE] [--hosts N] [-- SWEEP FLAGS]" >&2; exit 2 ;;
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
  --timeout 120
"$G" lab sweep --run-dir "$dir" --workers 2,4,6,8 --shards 1,2,N/2,N \
  --sizes 8M,32M --layouts ring,ps,ps-colocated --out "$out" --plot "$@"
