#!/usr/bin/env bash
# PyTorch DDP on gradsync's ring against torch's own Gloo, side by side in
# one run: the same example script (examples/torch/), the same launcher
# (`gradsync submit --entrypoint` on a local cluster), the same rendezvous
# (the coordinator's store); only the process group's backend differs
# (`--backend gradsync` or `--backend gloo`). Rounds alternate the two, so
# both see the same machine. Each job's step time is the median over its
# steps after --warmup of the slowest rank's step (gradsync metrics), and
# samples/s is the global batch over it.
#
#   scripts/bench/torch_ddp.sh                         # resnet18, lm, lm-wide; 4 ranks, 3 rounds
#   scripts/bench/torch_ddp.sh --models resnet18 --rounds 5 --steps 40
#
# Uses $BUILD_DIR/cli/gradsync (BUILD_DIR defaults to build/) and Debian's
# /usr/bin/python3 with python3-torch and python3-torchvision.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
G=$PWD/$BUILD_DIR/cli/gradsync
ranks=4
rounds=3
steps=30
warmup=5
models="resnet18 lm lm-wide"
while [ $# -gt 0 ]; do
  case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    *) echo "usage: $0 [--ranks N] [--rounds R] [--steps S] [--warmup W] [--models 'resnet18 lm lm-wide']" >&2; exit 2 ;;
  esac
done
run=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-torch-bench.XXXXXX")
cleanup() { "$G" local down --run-dir "$run/cluster" >/dev/null 2>&1 || true; rm -rf "$run"; }
trap cleanup EXIT
out=$("$G" local up --workers "$ranks" --port 0 --run-dir "$run/cluster" --timeout 60)
eval "$(echo "$out" | grep '^export ')"
work=$PWD/examples/torch

# job_time JOB: the median, over steps >= warmup, of the slowest rank's
# step_s; prints "step_s samples".
job_time() {
  "$G" metrics "$1" -o csv | /usr/bin/python3 -c '
import csv, statistics, sys
warmup = int(sys.argv[1])
rows = list(csv.DictReader(sys.stdin))
steps = {}
for r in rows:
    s = int(r["step"])
    if s < warmup:
        continue
    t = float(r["step_s"])
    n = int(r["samples"])
    old = steps.get(s, (0.0, 0))
    steps[s] = (max(old[0], t), old[1] + n)
times = [t for t, _ in steps.values()]
samples = statistics.median(n for _, n in steps.values())
print(f"{statistics.median(times):.6f} {samples}")' "$warmup"
}

calc() { /usr/bin/python3 -c "print(f'{$1:.2f}')"; }

declare -A cmd=(
  [resnet18]="/usr/bin/python3 resnet18.py --steps $steps --batch-size 64"
  [lm]="/usr/bin/python3 transformer_lm.py --steps $steps --batch-size 32"
  # The same model wider and on a tiny batch: 13 M parameters (52 MB of
  # gradient) against little compute, so the step is communication-bound.
  [lm-wide]="/usr/bin/python3 transformer_lm.py --steps $steps --batch-size 4 --dim 512 --layers 4 --context 16"
)
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD), $(nproc) cores, $ranks ranks, $steps steps ($warmup left out)"
printf "%-9s %-5s %-9s %12s %12s %10s\n" model round backend step_ms samples_s ratio
for model in $models; do
  for round in $(seq 1 "$rounds"); do
    declare -A t=()
    for backend in gradsync gloo; do
      job=$("$G" submit --json --workers "$ranks" --workdir "$work" \
              --entrypoint "${cmd[$model]} --backend $backend --ps off" |
            sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p')
      "$G" watch "$job" --deadline 1800 >/dev/null 2>&1 || true
      if ! "$G" status "$job" | grep -q SUCCEEDED; then
        echo "job $job ($model, $backend) did not succeed:" >&2
        "$G" status "$job" >&2
        exit 1
      fi
      read -r step samples < <(job_time "$job")
      t[$backend]=$step
      printf "%-9s %-5s %-9s %12s %12s\n" "$model" "$round" "$backend" \
        "$(calc "$step * 1000")" "$(calc "$samples / $step")"
    done
    printf "%-9s %-5s %-9s %12s %12s %10s\n" "$model" "$round" "gloo/ours" "" "" \
      "$(calc "${t[gloo]} / ${t[gradsync]}")"
  done
done
