#!/usr/bin/env bash
# The step simulator against the bottleneck lab (issue 41; docs/simulator.md,
# "Calibration and validation"): calibrate on small cells, predict cells the
# fit never saw, and write the error table.
#
#   sudo scripts/bench/sim_validate.sh [--link 100mbit|1gbit] [--out DIR]
#       [--hosts 8] [--ps-transport plane|grpc] [--steps 4] [--warmup 1]
#       [-- EXTRA SWEEP FLAGS]
#
# 1. `gradsync lab up`: --hosts worker hosts (8, at least 8), as many server
#    hosts, a colocated gradsync-ps on every worker host, every link at
#    --link.
# 2. The calibration sweep (OUT/fit): N = 2,3,4; K = 1..N; S = 4M,16M;
#    ring, PS on server hosts, PS colocated.
# 3. The held-out sweep (OUT/held-out): N = 6,8; K = 1,2,N; S = 8M,32M;
#    the same three layouts. (Hierarchical all-reduce: `lab sweep` has no
#    such layout; scripts/bench/lab_hier.sh measures it with `gradsync
#    bench`. `lab calibrate --from-bench` reads bench output, but skips
#    its hierarchical rows (a row does not say which ranks share a host),
#    so the hierarchical layout is neither fitted nor validated here.)
# 4. `gradsync lab calibrate` fits on the cells with N <= 4 (OUT/
#    calibration.json) and predicts the held-out ones against the target
#    (mean |error| <= 8 %, no cell beyond 20 %); `gradsync simulate
#    --calibration` loads the file.
# 5. OUT/validation.md: the machine, the commands, the fit and the error
#    table with its verdict (PASS or MISS).
#
# Estimated time on a 2-core machine (5 steps a cell, about 3 s of job
# start-up each): about 25 minutes at 100mbit (the held-out PS cells with
# K = 1 move 8 x 32 MiB through one server link), 10 to 15 at 1gbit, where
# the two cores rather than the links bound many cells.
#
# Needs root (namespaces, tc) and a built tree (build/cli/gradsync, or
# GRADSYNC=PATH). Takes the lab down on any exit.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
G="${GRADSYNC:-$root/build/cli/gradsync}"
out=sim-validate
link=100mbit
hosts=8
transport=plane
steps=4
warmup=1
usage="usage: $0 [--link RATE] [--out DIR] [--hosts N] [--ps-transport plane|grpc] [--steps N] [--warmup N] [-- SWEEP FLAGS]"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --link) link=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --ps-transport) transport=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
if [[ ! "$hosts" =~ ^[0-9]+$ ]] || (( hosts < 8 )); then
  echo "$0: --hosts $hosts: the held-out cells need 8 worker hosts" >&2
  exit 2
fi
if [[ ! -x "$G" ]]; then
  echo "$0: no gradsync at $G; build the tree or set GRADSYNC=PATH" >&2
  exit 2
fi
extra=("$@")
mkdir -p "$out"
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-sim-validate.XXXXXX")
prefix="gsv$(( $$ % 100000 ))"
cleanup() {
  "$G" lab down --run-dir "$dir" --prefix "$prefix" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

# Every command that makes a result, as run, for validation.md.
commands=()
run() {
  commands+=("$*")
  "$@"
}

started=$(date -u +%s)
run "$G" lab up --hosts "$hosts" --ps-hosts "$hosts" --colocate-ps \
  --link "$link" --ps-transport "$transport" --prefix "$prefix" \
  --subnet "10.74.$(( $$ % 200 ))" --run-dir "$dir" --timeout 120
common=(--run-dir "$dir" --steps "$steps" --warmup "$warmup"
        --ps-partition 128K --layouts "ring,ps,ps-colocated")
run "$G" lab sweep "${common[@]}" --workers 2,3,4 --shards all \
  --sizes 4M,16M --out "$out/fit" "${extra[@]}"
run "$G" lab sweep "${common[@]}" --workers 6,8 --shards 1,2,N \
  --sizes 8M,32M --out "$out/held-out" "${extra[@]}"
# (Redirected, not piped: a pipeline would run `run` in a subshell.)
run "$G" lab calibrate --sweep "$out/fit/sweep.json" \
  --sweep "$out/held-out/sweep.json" --max-workers 4 \
  -o "$out/calibration.json" --validate --markdown "$out/calibrate.md" \
  > "$out/calibrate.txt"
cat "$out/calibrate.txt"
# The file loads where users give it.
run "$G" simulate --model-profile resnet50 --workers 8 --link "$link" \
  --compute-ms 100 --layout ps --servers 2 \
  --calibration "$out/calibration.json" > "$out/simulate.txt"
cat "$out/simulate.txt"
minutes=$(( ($(date -u +%s) - started + 59) / 60 ))

verdict=$(grep -Eo '(PASS|MISS)$' "$out/calibrate.txt" | tail -n 1 || true)
{
  echo "# The simulator against held-out lab cells"
  echo
  echo "Run $(date -u +%Y-%m-%d) on $(hostname) ($(nproc) cores), commit" \
       "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)," \
       "links at $link, PS over $transport; $minutes min in all." \
       "Verdict: **${verdict:-none}** (target: held-out mean |error| <= 8%," \
       "no cell beyond 20%)."
  echo
  echo "Calibrated on the cells with N <= 4 (\`$out/fit\`), validated on"
  echo "N = 6, 8 (\`$out/held-out\`), which the fit never saw."
  echo
  echo '```'
  for c in "${commands[@]}"; do echo "$c"; done
  echo '```'
  echo
  cat "$out/calibrate.md"
  echo
  echo "\`gradsync simulate\` with the fitted file:"
  echo
  echo '```'
  cat "$out/simulate.txt"
  echo '```'
} > "$out/validation.md"
echo "wrote $out/validation.md (${verdict:-no verdict})"
