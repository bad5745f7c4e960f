#!/usr/bin/env bash
# Training throughput of gradsync's ring path against PyTorch DDP with the
# Gloo backend, side by side on this machine: the same MLP on Fashion-MNIST,
# the same global batch, optimizer, learning rate and number of processes
# (gradsync: one worker daemon per rank, `--devices cpu:1`; DDP: one process
# per rank), one BLAS thread per rank in both.
#
# A local gradsync cluster (coordinator + workers from the build directory)
# runs each job through the `gradsync` CLI; scripts/bench/ddp_mlp.py runs
# the PyTorch side. Runs are interleaved per configuration, rotating which
# tool goes first, for --rounds rounds; the tables show each tool's median.
#
#   samples/s   global batch x timed steps / wall time of the timed steps
#               (after --warmup steps; gradsync: from the step end times
#               the ranks report, the final step, which evaluates, left
#               out; DDP: the slowest rank between a barrier and its last
#               step)
#   comm        exposed communication / step time: the wait for gradient
#               all-reduces after backward, not overlapped with it
#               (gradsync's comm_s; DDP: measured from backward's last
#               gradient hook to the return of backward())
#
# Tables: (1) 4 ranks, both models, with the gradsync/DDP ratio; (2) the
# scaling of each model over 1, 2, 4 ranks next to one process without any
# synchronisation (torch without DDP; gradsync's 1-rank job, whose
# all-reduce over a world of one moves nothing); (3) with --accuracy-epochs
# E, test accuracy after E epochs of each tool at 4 ranks.
#
#   scripts/bench/train_compare.sh                  # 3 rounds
#   scripts/bench/train_compare.sh --rounds 5 --accuracy-epochs 10
#
# Needs: a build with gradsync-coordinator, gradsync-worker and gradsync
# (--build, default build), Debian's python3-torch (/usr/bin/python3), and
# dataset-fashion-mnist. Raw results (JSON lines, CSV metrics, logs) stay in
# the output directory.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="${BUILD_DIR:-$root/build}"
python="${PYTHON:-/usr/bin/python3}"
rounds=3
warmup=20
steps=200
large_steps=40
small_layers=784,256,256,10
large_layers=784,2048,2048,10
batch=256
optimizer=adam
lr=0.001
seed=1
scaling=1
accuracy_epochs=0
out=""
worker_args=""

usage() {
  cat <<EOF
usage: $0 [--build DIR] [--rounds 3] [--warmup 20] [--steps 200]
          [--large-steps 40] [--batch-size 256] [--optimizer adam] [--lr 0.001]
          [--no-scaling] [--accuracy-epochs E] [--worker-args "ARGS"] [--out DIR]

--steps and --large-steps are the timed steps of the small (784-256-256-10)
and large (784-2048-2048-10) model. --no-scaling runs only the 4-rank
comparison. --accuracy-epochs E also trains each tool for E epochs at 4
ranks and reports test accuracy. --worker-args passes extra flags to every
gradsync-worker (e.g. "--tcp-congestion default").
EOF
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --large-steps) large_steps=$2; shift 2 ;;
    --batch-size) batch=$2; shift 2 ;;
    --optimizer) optimizer=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
    --no-scaling) scaling=0; shift ;;
    --accuracy-epochs) accuracy_epochs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --worker-args) worker_args=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "train_compare.sh: unknown argument '$1'" >&2; usage >&2; exit 1 ;;
  esac
done

coordinator_bin="$build/server/coordinator/gradsync-coordinator"
worker_bin="$build/worker/gradsync-worker"
cli="$build/cli/gradsync"
for bin in "$coordinator_bin" "$worker_bin" "$cli"; do
  if [[ ! -x "$bin" ]]; then
    echo "train_compare.sh: no $bin (build gradsync-coordinator," \
         "gradsync-worker and gradsync, or pass --build)" >&2
    exit 1
  fi
done
if ! "$python" -c 'import torch' 2>/dev/null; then
  echo "train_compare.sh: $python has no torch (apt-get install python3-torch)" >&2
  exit 1
fi
if [[ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
  echo "train_compare.sh: no Fashion-MNIST (apt-get install dataset-fashion-mnist)" >&2
  exit 1
fi

out=${out:-$(mktemp -d /tmp/gradsync-train-compare.XXXXXX)}
mkdir -p "$out"
results="$out/results.jsonl"
: > "$results"

# ---- the local gradsync cluster: one worker process per rank ----
pids=()
stop_cluster() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap stop_cluster EXIT

# Polls `$@` (a command) every 0.1 s until it succeeds or $1 seconds pass.
wait_for() {
  local seconds=$1; shift
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    if ((SECONDS >= deadline)); then return 1; fi
    sleep 0.1
  done
}

"$coordinator_bin" --listen 127.0.0.1:0 > "$out/coordinator.log" 2>&1 &
pids+=($!)
announced() { grep -q "listening on" "$out/coordinator.log"; }
if ! wait_for 30 announced; then
  echo "train_compare.sh: the coordinator did not start; see $out/coordinator.log" >&2
  exit 1
fi
address=$(sed -n 's/^gradsync-coordinator listening on //p' "$out/coordinator.log" | head -1)
export GRADSYNC_COORDINATOR=$address
for i in 0 1 2 3; do
  "$worker_bin" --coordinator "$address" --devices cpu:1 --address 127.0.0.1 \
      --host bench $worker_args > "$out/worker-$i.log" 2>&1 &
  pids+=($!)
done
idle_workers() {
  [[ $("$cli" workers --json 2>/dev/null | grep -o 'WORKER_STATE_IDLE' | wc -l) -eq 4 ]]
}
if ! wait_for 60 idle_workers; then
  echo "train_compare.sh: 4 workers did not register; see $out/worker-*.log" >&2
  exit 1
fi

# ---- one run of each tool; each appends a JSON line to $results ----

# Summarises a gradsync job's metrics CSV as a JSON line.
summarise_gradsync() {  # csv ranks layers warmup timed_steps tag
  "$python" - "$@" <<'EOF'
import csv, json, sys
path, ranks, layers, warmup, timed, tag = sys.argv[1:7]
ranks, warmup, timed = int(ranks), int(warmup), int(timed)
rows = list(csv.DictReader(open(path)))
end = {}    # step -> latest end time over the ranks
comm = step = 0.0
batch = 0
for r in rows:
    s = int(r["step"])
    end[s] = max(end.get(s, 0.0), float(r["wall_time"]))
    if warmup <= s < warmup + timed:
        comm += float(r["comm_s"])
        step += float(r["step_s"])
    if s == 0:
        batch += int(r["samples"])
first, last = warmup - 1, warmup + timed - 1
wall = end[last] - end[first]
print(json.dumps({
    "tool": "gradsync", "tag": tag, "ranks": ranks,
    "layers": [int(w) for w in layers.split(",")], "batch_size": batch,
    "steps": timed, "samples_per_s": batch * timed / wall,
    "comm_share": comm / step if step > 0 else 0.0}))
EOF
}

run_gradsync() {  # tag ranks layers timed_steps
  local tag=$1 ranks=$2 layers=$3 timed=$4
  local total=$((warmup + timed + 1))  # + the final step, which evaluates
  local log="$out/gradsync-$tag-$ranks-$(date +%s%N).log"
  local id
  id=$("$cli" submit --json --workers "$ranks" --model mlp --layers "$layers" \
        --dataset fashion-mnist --optimizer "$optimizer" --lr "$lr" \
        --batch-size "$batch" --steps "$total" --seed "$seed" \
        --name "bench-$tag-$ranks" | sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p')
  if [[ -z "$id" ]]; then
    echo "train_compare.sh: gradsync submit failed" >&2
    return 1
  fi
  if ! "$cli" watch "$id" --deadline 1800 > "$log" 2>&1; then
    echo "train_compare.sh: gradsync job $id did not succeed; see $log" >&2
    return 1
  fi
  "$cli" metrics "$id" --format csv > "$out/$id.csv"
  summarise_gradsync "$out/$id.csv" "$ranks" "$layers" "$warmup" "$timed" \
      "$tag" >> "$results"
}

run_ddp() {  # tag ranks|nosync layers timed_steps
  local tag=$1 ranks=$2 layers=$3 timed=$4
  local flags=(--ranks "$ranks")
  if [[ $ranks == nosync ]]; then flags=(--no-sync); fi
  "$python" "$here/ddp_mlp.py" "${flags[@]}" --layers "$layers" \
      --batch-size "$batch" --optimizer "$optimizer" --lr "$lr" \
      --seed "$seed" --warmup "$warmup" --steps "$timed" --json \
    | "$python" -c "import json,sys; r=json.loads(sys.stdin.read()); r['tag']='$tag'; print(json.dumps(r))" \
    >> "$results"
}

# Configurations: tag ranks layers timed_steps. "nosync" is torch without
# DDP (gradsync's counterpart is its 1-rank job).
configs=("small 4 $small_layers $steps" "large 4 $large_layers $large_steps")
if ((scaling)); then
  configs+=("small 1 $small_layers $steps" "small 2 $small_layers $steps"
            "small nosync $small_layers $steps"
            "large 1 $large_layers $large_steps"
            "large 2 $large_layers $large_steps"
            "large nosync $large_layers $large_steps")
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "output in $out; load average at start: $(load)" >&2
blas=$(update-alternatives --display libblas.so.3-x86_64-linux-gnu 2>/dev/null \
       | sed -n 's/.*link currently points to //p')
echo "libblas.so.3 -> ${blas:-?}" >&2
for ((round = 0; round < rounds; round++)); do
  index=0
  for config in "${configs[@]}"; do
    read -r tag ranks layers timed <<<"$config"
    order=(gradsync ddp)
    if (((round + index) % 2)); then order=(ddp gradsync); fi
    for tool in "${order[@]}"; do
      if [[ $tool == gradsync && $ranks == nosync ]]; then continue; fi
      echo "round $((round + 1))/$rounds: $tool $tag ranks=$ranks (load $(load))" >&2
      "run_$tool" "$tag" "$ranks" "$layers" "$timed"
    done
    index=$((index + 1))
  done
done

if ((accuracy_epochs > 0)); then
  per_epoch=$((60000 / batch))
  total=$(( (accuracy_epochs * per_epoch) ))
  echo "accuracy: $accuracy_epochs epochs ($total steps) at 4 ranks (load $(load))" >&2
  id=$("$cli" submit --json --workers 4 --model mlp --layers "$small_layers" \
        --dataset fashion-mnist --optimizer "$optimizer" --lr "$lr" \
        --batch-size "$batch" --steps "$total" --seed "$seed" \
        --name bench-accuracy | sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p')
  "$cli" watch "$id" --deadline 3600 > "$out/gradsync-accuracy.log" 2>&1 || true
  "$cli" status "$id" --json | "$python" -c "
import json, sys
s = json.load(sys.stdin)
print(json.dumps({'tool': 'gradsync', 'tag': 'accuracy', 'ranks': 4,
                  'state': s.get('state'), 'epochs': $accuracy_epochs,
                  'steps': $total, 'test_accuracy': s.get('testAccuracy', 0)}))
" >> "$results"
  "$python" "$here/ddp_mlp.py" --ranks 4 --layers "$small_layers" \
      --batch-size "$batch" --optimizer "$optimizer" --lr "$lr" --seed "$seed" \
      --warmup 0 --steps "$total" --eval --json \
    | "$python" -c "import json,sys; r=json.loads(sys.stdin.read()); r['tag']='accuracy'; print(json.dumps(r))" \
    >> "$results"
fi
echo "load average at end: $(load)" >&2

# ---- tables ----
"$python" - "$results" "$rounds" "$optimizer" "$lr" "$batch" <<'EOF'
import json, statistics, sys
path, rounds, optimizer, lr, batch = sys.argv[1:6]
runs = [json.loads(line) for line in open(path) if line.strip()]

def median(tool, tag, ranks, key):
    values = [r[key] for r in runs
              if r["tool"].startswith(tool) and r.get("tag") == tag
              and str(r["ranks"]) == str(ranks) and key in r]
    return (statistics.median(values), len(values)) if values else (None, 0)

names = {"small": "784-256-256-10", "large": "784-2048-2048-10"}
def fmt(v, spec):
    return format(v, spec) if v is not None else "-"

print(f"\nglobal batch {batch}, {optimizer} lr {lr}" +
      (f", medians of {rounds} interleaved rounds\n" if int(rounds) > 0
       else "\n"))
if int(rounds) > 0:
    print("| model | ranks | gradsync samples/s | DDP (Gloo) samples/s "
          "| ratio | gradsync comm | DDP comm |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for tag in ("small", "large") if int(rounds) > 0 else ():
    g, _ = median("gradsync", tag, 4, "samples_per_s")
    d, _ = median("torch-ddp", tag, 4, "samples_per_s")
    gc, _ = median("gradsync", tag, 4, "comm_share")
    dc, _ = median("torch-ddp", tag, 4, "comm_share")
    ratio = g / d if g and d else None
    print(f"| {names[tag]} | 4 | {fmt(g, '.0f')} | {fmt(d, '.0f')} "
          f"| {fmt(ratio, '.2f')}x | {fmt(gc and 100 * gc, '.0f')}% "
          f"| {fmt(dc and 100 * dc, '.0f')}% |")

if any(r.get("tag") in ("small", "large") and str(r["ranks"]) in ("1", "2")
       for r in runs):
    for tag in ("small", "large"):
        print(f"\nscaling, {names[tag]} (samples/s, comm share)\n")
        print("| processes | gradsync samples/s | gradsync comm "
              "| DDP samples/s | DDP comm | ratio |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        nosync, _ = median("torch-nosync", tag, 1, "samples_per_s")
        print(f"| 1, no sync (torch without DDP) | - | - "
              f"| {fmt(nosync, '.0f')} | 0% | - |")
        for ranks in (1, 2, 4):
            g, _ = median("gradsync", tag, ranks, "samples_per_s")
            d, _ = median("torch-ddp", tag, ranks, "samples_per_s")
            gc, _ = median("gradsync", tag, ranks, "comm_share")
            dc, _ = median("torch-ddp", tag, ranks, "comm_share")
            ratio = g / d if g and d else None
            print(f"| {ranks} | {fmt(g, '.0f')} "
                  f"| {fmt(gc and 100 * gc, '.0f')}% | {fmt(d, '.0f')} "
                  f"| {fmt(dc and 100 * dc, '.0f')}% | {fmt(ratio, '.2f')}x |")

acc = [r for r in runs if r.get("tag") == "accuracy"]
if acc:
    print("\ntest accuracy, 784-256-256-10, 4 ranks\n")
    print("| tool | epochs | steps | test accuracy |")
    print("| --- | ---: | ---: | ---: |")
    for r in acc:
        epochs = r.get("epochs")
        print(f"| {r['tool']} | {fmt(epochs, '.1f') if epochs else '-'} "
              f"| {r.get('steps', '-')} | {fmt(r.get('test_accuracy'), '.4f')} |")
EOF
