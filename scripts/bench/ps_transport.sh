#!/usr/bin/env bash
# The parameter server's transport against raw TCP, over several runs of
# gradsync-ps-bench: each run alternates gRPC and raw-TCP rounds with the
# same process layout and shard work (see docs/performance/ps-transport.md).
# The host is shared and noisy, so one run says
# little; this prints each run's three summary numbers and their medians
# over the runs:
#
#   medians   the ratio of the two paths' median GB/s (gRPC / TCP);
#   rounds    the median of the per-round ratios (each round runs both
#             paths back to back, under the same load);
#   cpu       the CPU-time ratio per round, all processes (TCP / gRPC);
#
# how many runs reach the target ratio (--target, default 0.9: the PS
# issue's ">= 0.9x raw TCP"), by either of the first two numbers; and the
# TCP congestion control both paths ran (the bench's --tcp_congestion,
# default auto: reno on loopback).
#
#   scripts/bench/ps_transport.sh                         # 8 runs
#   scripts/bench/ps_transport.sh --runs 17 -- --rounds 20
#   scripts/bench/ps_transport.sh --target 0.85
#   scripts/bench/ps_transport.sh -- --clients 4 --bytes 64M --rounds 16 \
#       --warmup 2 --tcp_congestion default      # both paths on BBR, say
#   BUILD_DIR=build-c scripts/bench/ps_transport.sh -- --chunk_bytes 512K
#
# Arguments after `--` go to every gradsync-ps-bench run (default: --clients
# 4 --bytes 64M --rounds 16 --warmup 2). Uses
# $BUILD_DIR/server/ps/gradsync-ps-bench (BUILD_DIR defaults to build/).
# Exit status: 0 when every run finished exact (#wrong = 0), 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build_dir="${BUILD_DIR:-build}"
[[ "$build_dir" == /* ]] || build_dir="$root/$build_dir"
bench="$build_dir/server/ps/gradsync-ps-bench"
runs=8
target=0.9
bench_args=(--clients 4 --bytes 64M --rounds 16 --warmup 2)

usage() {
  echo "usage: $0 [--runs N] [--target RATIO] [-- gradsync-ps-bench arguments]" >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage
      runs=$2
      shift 2
      ;;
    --target)
      [[ $# -ge 2 && "$2" =~ ^[0-9]*\.?[0-9]+$ ]] || usage
      target=$2
      shift 2
      ;;
    --)
      shift
      bench_args=("$@")
      break
      ;;
    -h | --help) usage ;;
    *) usage ;;
  esac
done

if [[ ! -x "$bench" ]]; then
  echo "$0: $bench not found; build first (scripts/test.sh or cmake --build)" >&2
  exit 1
fi

log=$(mktemp "${TMPDIR:-/tmp}/gradsync-ps-transport.XXXXXX")
loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }
echo "# $runs runs of: gradsync-ps-bench ${bench_args[*]}"
echo "# raw output: $log"
# The host is shared: the load before and after says how busy it was.
echo "# load average at the start: $(loadavg)"
failed=0
for ((i = 1; i <= runs; i++)); do
  echo "## run $i" >>"$log"
  if ! "$bench" "${bench_args[@]}" >>"$log" 2>&1; then failed=1; fi
done

# Both paths' congestion control, from the first run's header line.
congestion=$(sed -n 's/^# gradsync-ps-bench:.*, tcp congestion \([^,]*\).*/\1/p' "$log" |
  head -n 1)
echo "# tcp congestion (both paths): ${congestion:-?}"

# One line per run: medians rounds cpu #wrong ("-" where a number is missing).
rows=$(awk '
  function flush() { if (run) print m, r, c, w }
  /^## run / { flush(); run = 1; m = r = c = w = "-" }
  /median GB\/s:/ { sub(/.*grpc\/tcp = /, ""); m = $1 }
  /median of the rounds/ { sub(/.*grpc\/tcp: /, ""); r = $1 }
  /median CPU ms per round/ { sub(/.*tcp\/grpc = /, ""); c = $1 }
  /#wrong total:/ { w = $NF }
  END { flush() }' "$log")

median() { sort -g | awk '{ v[NR] = $1 } END {
  if (NR % 2) printf "%.3f", v[(NR + 1) / 2];
  else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
range() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END {
  printf "%.3f..%.3f", lo, hi }'; }

printf "%4s %8s %8s %8s %7s\n" run medians rounds cpu "#wrong"
echo "$rows" | awk '{ printf "%4d %8s %8s %8s %7s\n", NR, $1, $2, $3, $4 }'
complete=$(echo "$rows" | awk '$1 != "-" && $2 != "-" && $3 != "-" && $4 == "0"')
if [[ -z "$complete" || "$complete" != "$rows" ]]; then
  echo "# a run failed, was not exact or printed no summary: see $log" >&2
  failed=1
fi
if [[ -n "$complete" ]]; then
  n=$(echo "$complete" | wc -l)
  col() { echo "$complete" | awk -v k="$1" '{ print $k }'; }
  echo "# median over $n runs: medians $(col 1 | median)," \
    "rounds $(col 2 | median), cpu $(col 3 | median)"
  echo "# ranges: medians $(col 1 | range), rounds $(col 2 | range)," \
    "cpu $(col 3 | range)"
  reach() { col "$1" | awk -v t="$target" '$1 >= t { k++ } END { print k + 0 }'; }
  printf "# runs at or above %.3f: medians %d of %d, rounds %d of %d\n" \
    "$target" "$(reach 1)" "$n" "$(reach 2)" "$n"
fi
echo "# load average at the end: $(loadavg)"
exit "$failed"
