#!/usr/bin/env bash
# 16-bit ring gradients on the bottleneck lab (docs/performance/
# lab-bf16-ring.md, issue 40): the built-in synthetic model on the ring,
# `--grad-dtype bf16` against fp32, ROUNDS rounds side by side (fp32 then
# bf16 in each) on one lab of W worker hosts with links at RATE. Each job's
# sync time (median over the steps after the warm-up of the slowest rank's
# sync_busy_s, and its bytes on the wire) is printed next to the alpha-beta
# prediction `gradsync explain` gives for it.
#
#   sudo scripts/bench/lab_bf16_ring.sh [--link 1gbit] [--rounds 3]
#       [--workers 2] [--floats 16M] [--steps 12] [--warmup 2] [--out DIR]
#
# Needs root (namespaces, tc) and a built tree (build/cli/gradsync, or
# GRADSYNC=PATH). Brings the lab down on any exit. Writes OUT/results.csv,
# OUT/<job>.csv (metrics), OUT/<job>.explain.{json,txt} and OUT/lab-up.txt.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
G="${GRADSYNC:-$root/build/cli/gradsync}"
out=lab-bf16-ring
link=1gbit
rounds=3
workers=2
floats=16M
steps=12
warmup=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --floats) floats=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    *) echo "usage: $0 [--link RATE] [--rounds N] [--workers N] [--floats F] [--steps N] [--warmup N] [--out DIR]" >&2; exit 2 ;;
  esac
done
[[ "$(id -u)" -eq 0 ]] || { echo "$0: needs root (the lab's namespaces and tc)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
prefix="gbf$(( $$ % 10000 ))"
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-lab-bf16.XXXXXX")
cleanup() {
  "$G" lab down --run-dir "$dir" --prefix "$prefix" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

"$G" lab up --hosts "$workers" --link "$link" --prefix "$prefix" \
  --subnet "10.74.$(( $$ % 200 ))" --run-dir "$dir" --timeout 120 |
  tee "$out/lab-up.txt"
eval "$(grep '^export ' "$out/lab-up.txt")"
export GRADSYNC_LAB_DIR="$dir"

: >"$out/jobs.txt"
for round in $(seq 1 "$rounds"); do
  for dtype in fp32 bf16; do
    job=$("$G" submit --json --model synthetic --synthetic-floats "$floats" \
      --workers "$workers" --mode ring --grad-dtype "$dtype" --steps "$steps" |
      sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p')
    [[ -n "$job" ]] || { echo "submit printed no job id" >&2; exit 1; }
    "$G" watch "$job" --deadline 600 >/dev/null 2>&1 || true
    "$G" status "$job" | grep -q SUCCEEDED ||
      { "$G" status "$job" >&2; exit 1; }
    "$G" metrics "$job" -o csv >"$out/$job.csv"
    "$G" explain "$job" --json >"$out/$job.explain.json" 2>&1 || true
    "$G" explain "$job" >"$out/$job.explain.txt" 2>&1 || true
    echo "$round,$dtype,$job" >>"$out/jobs.txt"
  done
done

/usr/bin/python3 - "$out" "$warmup" <<'PYEOF'
import csv, json, statistics, sys
out, warmup = sys.argv[1], int(sys.argv[2])
rows = []
for line in open(f"{out}/jobs.txt"):
    rnd, dtype, job = line.strip().split(",")
    per_step, sent = {}, []
    for r in csv.DictReader(open(f"{out}/{job}.csv")):
        step = int(r["step"])
        if step < warmup:
            continue
        per_step[step] = max(per_step.get(step, 0.0), float(r["sync_busy_s"]))
        sent.append(int(r["bytes_sent"]))
    busy = statistics.median(per_step.values())
    predicted = None
    try:
        text = open(f"{out}/{job}.explain.json").read()
        for m in json.loads(text[text.index("{"):]).get("modes", []):
            predicted = m.get("predictedS")
    except (ValueError, OSError):
        pass
    rows.append((rnd, dtype, job, busy, statistics.median(sent), predicted))
with open(f"{out}/results.csv", "w") as f:
    f.write("round,grad_dtype,job,sync_s,bytes_sent_per_step,predicted_sync_s\n")
    for r in rows:
        f.write(f"{r[0]},{r[1]},{r[2]},{r[3]:.4f},{r[4]:.0f},"
                f"{'' if r[5] is None else f'{r[5]:.4f}'}\n")
print(f"{'round':>5} {'dtype':<5} {'job':<7} {'sync s':>7} {'sent MB':>8} "
      f"{'model s':>7}")
for r in rows:
    model = "-" if r[5] is None else f"{r[5]:.3f}"
    print(f"{r[0]:>5} {r[1]:<5} {r[2]:<7} {r[3]:7.3f} {r[4] / 1e6:8.1f} "
          f"{model:>7}")
PYEOF
echo "results in $out/results.csv; explain's text in $out/*.explain.txt"
