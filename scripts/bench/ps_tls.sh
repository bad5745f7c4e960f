#!/usr/bin/env bash
# What mutual TLS costs on the parameter server's path: several runs of
# gradsync-ps-bench --transports grpc,tls, each alternating rounds of the
# same shard behind plaintext gRPC and behind gRPC with mutual TLS (a CA
# made in memory), in one process layout. Prints per run the median time,
# throughput and CPU per round of each, and the tls/grpc ratios; then their
# medians and ranges over the runs (docs/security.md quotes them).
#
#   scripts/bench/ps_tls.sh                          # 3 runs
#   scripts/bench/ps_tls.sh --runs 5 -- --clients 2 --bytes 16M --rounds 12
#
# Arguments after `--` go to every run (default: --clients 4 --bytes 16M
# --rounds 12 --warmup 2); --transports grpc,tls is always added. Uses
# $BUILD_DIR/server/ps/gradsync-ps-bench (BUILD_DIR defaults to build/).
# Exit status: 0 when every run finished exact (#wrong = 0), 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build_dir="${BUILD_DIR:-build}"
[[ "$build_dir" == /* ]] || build_dir="$root/$build_dir"
bench="$build_dir/server/ps/gradsync-ps-bench"
runs=3
bench_args=(--clients 4 --bytes 16M --rounds 12 --warmup 2)

usage() {
  echo "usage: $0 [--runs N] [-- gradsync-ps-bench arguments]" >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage
      runs=$2
      shift 2
      ;;
    --)
      shift
      bench_args=("$@")
      break
      ;;
    *) usage ;;
  esac
done
if [[ ! -x "$bench" ]]; then
  echo "$0: $bench not found; build first (scripts/build.sh)" >&2
  exit 1
fi

log=$(mktemp "${TMPDIR:-/tmp}/gradsync-ps-tls.XXXXXX")
loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }
echo "# $runs runs of: gradsync-ps-bench ${bench_args[*]} --transports grpc,tls"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores," \
  "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# raw output: $log"
echo "# load average at the start: $(loadavg)"
failed=0
for ((i = 1; i <= runs; i++)); do
  echo "## run $i" >>"$log"
  if ! "$bench" "${bench_args[@]}" --transports grpc,tls >>"$log" 2>&1; then
    failed=1
  fi
done

# One line per run: grpc_ms tls_ms grpc_GBps tls_GBps grpc_cpu tls_cpu
# medians rounds #wrong ("-" where missing).
rows=$(awk '
  function flush() { if (run) print gm, tm, gb, tb, gc, tc, m, r, w }
  /^## run / { flush(); run = 1; gm = tm = gb = tb = gc = tc = m = r = w = "-" }
  /^# grpc +median:/ { gm = $4; gb = $6; gc = $12 }
  /^# tls +median:/ { tm = $4; tb = $6; tc = $12 }
  /^# time tls\/grpc:/ {
    sub(/.*ratio of the medians /, ""); m = $1 + 0
    sub(/.*ratios /, ""); r = $1 }
  /#wrong total:/ { w = $NF }
  END { flush() }' "$log")

median() { sort -g | awk '{ v[NR] = $1 } END {
  if (NR % 2) printf "%.3f", v[(NR + 1) / 2];
  else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
range() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END {
  printf "%.3f..%.3f", lo, hi }'; }

printf "%4s %8s %8s %9s %9s %9s %9s %8s %8s %7s\n" run grpc_ms tls_ms \
  grpc_GB/s tls_GB/s grpc_cpu tls_cpu medians rounds "#wrong"
echo "$rows" | awk '{ printf "%4d %8s %8s %9s %9s %9s %9s %8s %8s %7s\n", NR,
  $1, $2, $3, $4, $5, $6, $7, $8, $9 }'
complete=$(echo "$rows" | awk '$1 != "-" && $2 != "-" && $7 != "-" &&
  $9 == "0"')
if [[ -z "$complete" || "$complete" != "$rows" ]]; then
  echo "# a run failed, was not exact or printed no summary: see $log" >&2
  failed=1
fi
if [[ -n "$complete" ]]; then
  n=$(echo "$complete" | wc -l)
  col() { echo "$complete" | awk -v k="$1" '{ print $k }'; }
  cpu=$(echo "$complete" | awk '$5 > 0 { print $6 / $5 }')
  echo "# over $n runs: time tls/grpc medians $(col 7 | median)" \
    "($(col 7 | range)), rounds $(col 8 | median) ($(col 8 | range));" \
    "CPU per round tls/grpc $(echo "$cpu" | median) ($(echo "$cpu" | range))"
  echo "# ms per round: grpc $(col 1 | median) ($(col 1 | range)), tls" \
    "$(col 2 | median) ($(col 2 | range)); GB/s grpc $(col 3 | median)," \
    "tls $(col 4 | median)"
fi
echo "# load average at the end: $(loadavg)"
exit "$failed"
