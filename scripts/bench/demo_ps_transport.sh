#!/usr/bin/env bash
# The demo's PS phase on each PS transport, side by side: one default local
# cluster (mutual TLS, 4 CPU workers, 2 parameter servers, as
# scripts/demo.sh starts it), and the demo's job in PS mode (MLP
# 784-256-256-10 on Fashion-MNIST, Adam, global batch 256, 2 shards) run
# STEPS steps per run, alternating --ps-transport plane (the default) and
# grpc (gRPC streams under TLS), RUNS times each. Per run it prints the
# samples/s of the settled steps (the first 10 are left out) from the
# job's metrics, and at the end each transport's median and range, and the
# ratio plane / grpc of each pair of runs.
#
#   scripts/bench/demo_ps_transport.sh [--runs 3] [--steps 120]
#
# Uses $BUILD_DIR/cli/gradsync (BUILD_DIR defaults to build/) and
# /usr/bin/python3 for the arithmetic. Stops the cluster on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir="${BUILD_DIR:-build}"
[[ "$build_dir" == /* ]] || build_dir="$root/$build_dir"
gradsync="$build_dir/cli/gradsync"
runs=3
steps=120
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--steps N]" >&2; exit 2 ;;
  esac
done
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-demo-ps.XXXXXX")
cleanup() {
  "$gradsync" local down --run-dir "$run_dir" >/dev/null 2>&1 || true
  rm -rf "$run_dir"
}
trap cleanup EXIT
cd "$root"  # as scripts/demo.sh: the daemons start from the repository
out=$("$gradsync" local up --workers 4 --ps 2 --run-dir "$run_dir" --port 0)
eval "$(echo "$out" | grep '^export ')"

samples_per_s() {  # JOB -> the settled steps' samples/s
  "$gradsync" metrics "$1" -o csv | /usr/bin/python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
steps = {}
for r in rows:
    s = int(r["step"])
    if s < 10:
        continue
    t, n = steps.get(s, (0.0, 0))
    steps[s] = (max(t, float(r["step_s"])), n + int(r["samples"]))
total_s = sum(t for t, _ in steps.values())
print("%.0f" % (sum(n for _, n in steps.values()) / total_s))'
}

declare -A results
for run in $(seq 1 "$runs"); do
  for transport in plane grpc; do
    job=$("$gradsync" submit --name "demo-$transport-$run" --workers 4 \
      --model mlp --layers 784,256,256,10 --dataset fashion-mnist \
      --optimizer adam --lr 0.001 --batch-size 256 --steps "$steps" --seed 1 \
      --mode ps --ps-shards 2 --ps-transport "$transport" --json |
      sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p')
    "$gradsync" watch "$job" --deadline 600 >/dev/null
    "$gradsync" status "$job" --json | grep -q '"state": *"JOB_STATE_SUCCEEDED"' ||
      { echo "job $job ($transport) did not succeed" >&2; exit 1; }
    rate=$(samples_per_s "$job")
    results[$transport-$run]=$rate
    echo "run $run: $transport $rate samples/s ($job)"
  done
done
pairs=()
for key in "${!results[@]}"; do pairs+=("$key" "${results[$key]}"); done
/usr/bin/python3 - "$runs" "${pairs[@]}" <<'EOF'
import statistics, sys
runs = int(sys.argv[1])
kv = sys.argv[2:]
r = {kv[i]: float(kv[i + 1]) for i in range(0, len(kv), 2)}
for t in ("plane", "grpc"):
    v = [r[f"{t}-{i}"] for i in range(1, runs + 1)]
    print(f"{t}: median {statistics.median(v):.0f} samples/s "
          f"({min(v):.0f}-{max(v):.0f})")
ratios = [r[f"plane-{i}"] / r[f"grpc-{i}"] for i in range(1, runs + 1)]
print("plane / grpc per run: " + ", ".join(f"{x:.2f}" for x in ratios) +
      f"; range {min(ratios):.2f}-{max(ratios):.2f}")
EOF
