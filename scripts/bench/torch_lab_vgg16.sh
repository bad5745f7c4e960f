#!/usr/bin/env bash
# The PS path against the ring for a VGG-16-sized torch model on the
# bottleneck lab (docs/performance/torch-lab-vgg16.md): examples/torch/
# vgg16.py (torchvision's VGG-16, 138 M parameters, 528 MiB of fp32
# gradient a step) on 32x32 synthetic images, a small batch per rank, so
# that the links, not this machine's cores, bound the step. One lab (W
# worker hosts, 2 PS hosts, links at RATE), then ROUNDS rounds of three
# jobs side by side: the ring (DDP's buckets through gradsync's ring via
# DistributedOptimizer), the sum-only PS with K=1 and with K=2 shards on
# the PS hosts. Each job's measured step and sync time (median over the
# steps after the warm-up, the slowest rank per step) is printed next to
# the alpha-beta prediction `gradsync explain` gives for it.
#
#   sudo scripts/bench/torch_lab_vgg16.sh [--link 1gbit] [--rounds 3]
#       [--workers 2] [--steps 6] [--warmup 2] [--batch 2] [--out DIR]
#
# Needs root (namespaces, tc), Debian's python3-torch and -torchvision, and
# a built tree (build/cli/gradsync and build/python, or GRADSYNC=PATH).
# Brings the lab down on any exit. Writes OUT/results.csv (one row per job),
# OUT/<job>.csv (its metrics), OUT/<job>.explain.json and OUT/lab-up.txt.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
G="${GRADSYNC:-$root/build/cli/gradsync}"
py=/usr/bin/python3
out=torch-lab-vgg16
link=1gbit
rounds=3
workers=2
steps=6
warmup=2
batch=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    *) echo "usage: $0 [--link RATE] [--rounds N] [--workers N] [--steps N] [--warmup N] [--batch N] [--out DIR]" >&2; exit 2 ;;
  esac
done
[[ "$(id -u)" -eq 0 ]] || { echo "$0: needs root (the lab's namespaces and tc)" >&2; exit 1; }
"$py" -c 'import torch, torchvision' 2>/dev/null ||
  { echo "$0: needs Debian's python3-torch and python3-torchvision" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
prefix="gtv$(( $$ % 10000 ))"
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-lab-vgg16.XXXXXX")
cleanup() {
  "$G" lab down --run-dir "$dir" --prefix "$prefix" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

"$G" lab up --hosts "$workers" --ps-hosts 2 --link "$link" --allow-entrypoints \
  --prefix "$prefix" --subnet "10.76.$(( $$ % 200 ))" --run-dir "$dir" \
  --timeout 120 | tee "$out/lab-up.txt"
eval "$(grep '^export ' "$out/lab-up.txt")"
export GRADSYNC_LAB_DIR="$dir"

run_job() {  # NAME MODE-FLAGS...: submits vgg16.py, waits, records the job
  local name=$1 job
  shift
  job=$("$G" submit --json --workers "$workers" "$@" \
    --workdir "$root/examples/torch" --step-deadline-s 600 --entrypoint \
    "$py vgg16.py --steps $steps --batch-size $batch --ps sum" |
    sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p')
  [[ -n "$job" ]] || { echo "submit of $name printed no job id" >&2; return 1; }
  "$G" watch "$job" --deadline 1800 >/dev/null 2>&1 || true
  if ! "$G" status "$job" | grep -q SUCCEEDED; then
    "$G" status "$job" >&2; "$G" logs "$job" | tail -n 20 >&2
    return 1
  fi
  "$G" metrics "$job" -o csv >"$out/$job.csv"
  "$G" explain "$job" --json >"$out/$job.explain.json" 2>&1 || true
  "$G" explain "$job" >"$out/$job.explain.txt" 2>&1 || true
  echo "$round,$name,$job" >>"$out/jobs.txt"
}

: >"$out/jobs.txt"
for round in $(seq 1 "$rounds"); do
  run_job ring --mode ring
  run_job ps-k1 --mode ps --ps-shards 1 --ps-placement separate
  run_job ps-k2 --mode ps --ps-shards 2 --ps-placement separate
done

"$py" - "$out" "$warmup" <<'PYEOF'
import csv, json, statistics, sys
out, warmup = sys.argv[1], int(sys.argv[2])
rows = []
for line in open(f"{out}/jobs.txt"):
    rnd, name, job = line.strip().split(",")
    per_step = {}
    for r in csv.DictReader(open(f"{out}/{job}.csv")):
        step = int(r["step"])
        if step < warmup:
            continue
        s = per_step.setdefault(step, [0.0, 0.0, 0.0])
        s[0] = max(s[0], float(r["step_s"]))
        s[1] = max(s[1], float(r["comm_s"]))
        s[2] = max(s[2], float(r["sync_busy_s"]))
    step_s = statistics.median(v[0] for v in per_step.values())
    comm_s = statistics.median(v[1] for v in per_step.values())
    busy_s = statistics.median(v[2] for v in per_step.values())
    predicted = sync = ring_p = ps_p = None
    try:
        text = open(f"{out}/{job}.explain.json").read()
        data = json.loads(text[text.index("{"):])
        for m in data.get("modes", []):
            predicted, sync = m.get("predictedS"), m.get("syncS")
        ring_p, ps_p = data.get("ringPredictedS"), data.get("psPredictedS")
    except (ValueError, OSError):
        pass
    rows.append((rnd, name, job, step_s, comm_s, busy_s, sync, predicted,
                 ring_p, ps_p))
with open(f"{out}/results.csv", "w") as f:
    f.write("round,layout,job,step_s,comm_s,sync_busy_s,explain_sync_s,"
            "predicted_sync_s,ring_predicted_s,ps_predicted_s\n")
    for r in rows:
        f.write(",".join("" if v is None else
                         (f"{v:.3f}" if isinstance(v, float) else str(v))
                         for v in r) + "\n")
def fmt(v):
    return "-" if v is None else f"{v:.3f}"
print(f"{'round':>5} {'layout':<6} {'job':<7} {'step s':>7} {'comm s':>7} "
      f"{'busy s':>7} {'sync s':>7} {'model s':>7}")
for r in rows:
    print(f"{r[0]:>5} {r[1]:<6} {r[2]:<7} {r[3]:7.3f} {r[4]:7.3f} "
          f"{r[5]:7.3f} {fmt(r[6]):>7} {fmt(r[7]):>7}")
PYEOF
echo "results in $out/results.csv; explain's text in $out/*.explain.txt"
